import { describe, expect, it } from "vitest";
import { filterAllows } from "../../../src/agent/tools";
import { intersectToolFilters, type ToolFilter } from "../../../src/contract/tool-filter";

/**
 * src/contract/tool-filter.ts `intersectToolFilters`: a tool is allowed by the intersection iff
 * both filters allow it (an absent filter allows every tool), whatever their shapes, and
 * intersections compose down a tree of any depth. Checked against `filterAllows`, the rule the
 * tool catalog applies, over every pair and triple of a set of filters and every tool name.
 */

const NAMES = ["echo", "subagent", "send_message", "mcp__docs__search", "lookup"];

const FILTERS: (ToolFilter | undefined)[] = [
  undefined,
  { deny: ["echo"] },
  { deny: ["subagent", "lookup"] },
  { allow: ["echo"] },
  { allow: ["echo", "subagent", "lookup"] },
  { allow: ["subagent", "mcp__docs__search"], deny: ["subagent"] },
  { allow: [] },
  { deny: [] },
  { allow: ["lookup", "echo"], deny: ["send_message"] },
];

const label = (f: ToolFilter | undefined) => JSON.stringify(f ?? "none");

describe("a child's tool filter is the intersection of its parent's and its own", () => {
  it("allows a tool iff the parent's filter and the request's filter both allow it", () => {
    for (const parent of FILTERS) {
      for (const request of FILTERS) {
        const child = intersectToolFilters(parent, request);
        for (const name of NAMES) {
          expect(filterAllows(child, name), `${label(parent)} ∩ ${label(request)}: ${name}`).toBe(
            filterAllows(parent, name) && filterAllows(request, name),
          );
        }
      }
    }
  });

  it("composes down any depth: a grandchild's filter allows a tool iff every filter above it does", () => {
    for (const root of FILTERS) {
      for (const child of FILTERS) {
        for (const grandchild of FILTERS) {
          const effective = intersectToolFilters(intersectToolFilters(root, child), grandchild);
          for (const name of NAMES) {
            expect(
              filterAllows(effective, name),
              `${label(root)} ∩ ${label(child)} ∩ ${label(grandchild)}`,
            ).toBe([root, child, grandchild].every((f) => filterAllows(f, name)));
          }
        }
      }
    }
  });

  it("is an allow list of the names both allow and a deny list of every denied name, each without duplicates; absent when neither is set", () => {
    expect(intersectToolFilters(undefined, undefined)).toBeUndefined();
    expect(
      intersectToolFilters(
        { allow: ["echo", "lookup"], deny: ["subagent"] },
        { allow: ["lookup", "subagent"], deny: ["subagent", "echo"] },
      ),
    ).toEqual({ allow: ["lookup"], deny: ["subagent", "echo"] });
    // a request cannot widen its parent's allow list, only narrow it
    expect(intersectToolFilters({ allow: ["echo"] }, { allow: ["lookup"] })).toEqual({ allow: [] });
  });

  it("leaves both filters as they were", () => {
    const parent: ToolFilter = { allow: ["echo", "lookup"], deny: ["subagent"] };
    const request: ToolFilter = { allow: ["lookup"], deny: ["echo"] };
    const before = JSON.stringify([parent, request]);
    intersectToolFilters(parent, request);
    expect(JSON.stringify([parent, request])).toBe(before);
  });
});
