/** Which tools a session's model sees: `allow` (only these) and then `deny` (never these), by name. */
export interface ToolFilter {
  allow?: string[] | undefined;
  deny?: string[] | undefined;
}
