/**
 * What built-in tools may ask of the session that runs them. Implemented by the Session object;
 * kept as an interface so tools stay runtime-agnostic.
 */
export interface SessionHost {
  readonly sessionId: string;
}
