/**
 * The deployment's vars the objects read, as the host gives them (on Workers, the Worker's
 * `[vars]` and secrets): every one optional, a string, and read where it is used, where an absent
 * or malformed value means the default (README "Configuration" says what each does).
 */
export interface DeploymentVars {
  readonly DEFAULT_MODEL?: string;
  readonly MAX_DEPTH_CAP?: string;
  readonly MAX_CHILDREN_PER_SESSION?: string;
  readonly MAX_STEPS_PER_TURN?: string;
  readonly MODEL_TIMEOUT_SECONDS?: string;
  readonly MODEL_ATTEMPTS_PER_STEP?: string;
  readonly DEFAULT_CONTEXT_WINDOW?: string;
  readonly MAX_CONTEXT_WINDOW?: string;
  readonly COMPACTION_MODEL?: string;
  readonly REQUIRE_APPROVAL?: string;
  readonly PUBLIC_URL?: string;
  readonly REMOTE_DEADLINE_SECONDS?: string;
  readonly MAX_SESSIONS_PER_TREE?: string;
  readonly MAX_PENDING_MESSAGES?: string;
  readonly MAX_LOG_BYTES?: string;
  readonly MAX_SUBSCRIBERS_PER_SESSION?: string;
  readonly RETENTION_DAYS?: string;
  readonly MODEL_PRICES?: string;
  readonly MCP_FACE_DECISIONS?: string;
  readonly OTEL_SERVICE_NAME?: string;
  readonly OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?: string;
  readonly OTEL_BSP_SCHEDULE_DELAY?: string;
  readonly OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  /** A secret (`wrangler secret put`), so among no generated vars. */
  readonly OTEL_EXPORTER_OTLP_HEADERS?: string;
}
