/**
 * The benchmark Worker: the product's Worker exactly as deployed (src/index.ts), plus the raw
 * Durable Object floor (`FloorObject`) and its routes under `/bench/`, which the product never
 * carries. `npm run bench` bundles this entry (bench/lib/worker.mjs) with a `FLOOR` binding.
 */
import product from "../../src/index";
import { type BenchEnv, benchRoute } from "./bench-routes";

export { RegistryObject, SessionObject, SubagentsEntrypoint } from "../../src/index";
export { FloorObject } from "./floor-object";

export default {
  async fetch(request: Request, env: BenchEnv, ctx: ExecutionContext): Promise<Response> {
    if (new URL(request.url).pathname.startsWith("/bench/")) return benchRoute(request, env, ctx);
    return product.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<BenchEnv>;
