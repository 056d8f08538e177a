/** Where the A2A face's JSON-RPC endpoint is served, under the API's base path (its card names it). */
export const A2A_ENDPOINT_PATH = "/v1/a2a";
