import { DESCRIPTOR_VERSION, type Descriptor, DescriptorSchema } from "../contract/descriptor";

export { DESCRIPTOR_VERSION, type Descriptor };

export function oneShotDescriptor(provider: string, label?: string): Descriptor {
  return label === undefined
    ? { version: DESCRIPTOR_VERSION, mode: "one-shot", provider }
    : { version: DESCRIPTOR_VERSION, mode: "one-shot", provider, label };
}

/**
 * Reads the FIRST descriptor of a slice of events: undefined when there is none or it has another
 * version; throws for a malformed current-version payload.
 */
export function foldDescriptor(payloads: readonly unknown[]): Descriptor | undefined {
  const first = payloads[0];
  if (first === undefined) return undefined;
  if (typeof first !== "object" || first === null || Array.isArray(first))
    throw new Error("descriptor is not an object");
  const version = "version" in first ? first.version : undefined;
  if (typeof version !== "number") throw new Error("descriptor version is not a number");
  if (version !== DESCRIPTOR_VERSION) return undefined;
  const parsed = DescriptorSchema.safeParse(first);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `descriptor is malformed: ${issue ? `${issue.path.join(".") || "root"}: ${issue.message}` : "invalid"}`,
    );
  }
  return parsed.data;
}
