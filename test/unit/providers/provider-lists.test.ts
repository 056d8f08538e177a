import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ProviderInfo } from "../../../src/contract/provider";
import {
  forgetProviderLists,
  PROVIDER_LIST_TTL_MS,
  providerList,
} from "../../../src/providers/provider-lists";

/** The isolate's provider lists behind the `subagent` tools: one registry read for many objects. */

const info = (name: string) => ({ name }) as unknown as ProviderInfo;
let now = 1_000_000;
beforeEach(() => {
  forgetProviderLists();
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(now);
});
afterEach(() => vi.useRealTimers());

describe("the provider lists of an isolate", () => {
  it("answer many concurrent first readers with one registry read, and reuse it for 2 s", async () => {
    let reads = 0;
    const read = async () => {
      reads++;
      return [info(`spawn-${reads}`)];
    };
    const lists = await Promise.all(Array.from({ length: 100 }, () => providerList("r", read, () => [])));
    expect(reads).toBe(1);
    expect(new Set(lists.map((l) => l[0]!.name))).toEqual(new Set(["spawn-1"]));
    now += PROVIDER_LIST_TTL_MS - 1;
    vi.setSystemTime(now);
    expect((await providerList("r", read, () => []))[0]!.name).toBe("spawn-1");
    now += 1;
    vi.setSystemTime(now);
    expect((await providerList("r", read, () => []))[0]!.name).toBe("spawn-2");
  });

  it("keep registries apart, and read again at once after a change through this isolate", async () => {
    let reads = 0;
    const read = async () => [info(`v${++reads}`)];
    await providerList("a", read, () => []);
    await providerList("b", read, () => []);
    expect(reads).toBe(2);
    forgetProviderLists();
    expect((await providerList("a", read, () => []))[0]!.name).toBe("v3");
  });

  it("fall back to the last known list, else the defaults, when the registry cannot be read", async () => {
    const broken = async (): Promise<ProviderInfo[]> => {
      throw new Error("unreachable");
    };
    expect(await providerList("x", broken, () => [info("default")])).toEqual([info("default")]);
    await providerList(
      "y",
      async () => [info("known")],
      () => [],
    );
    now += PROVIDER_LIST_TTL_MS;
    vi.setSystemTime(now);
    expect(await providerList("y", broken, () => [info("default")])).toEqual([info("known")]);
  });
});
