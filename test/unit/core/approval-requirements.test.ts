import { describe, expect, it } from "vitest";
import { childRequirements, deploymentRequirements, needsApproval } from "../../../src/core/approvals";

/** Which calls need approval (README "Approvals"), pure. */
describe("approval requirements", () => {
  it("match a tool by its name or by a prefix ending in *", () => {
    expect(needsApproval(["echo", "deploy_*"], "echo")).toBe(true);
    expect(needsApproval(["echo", "deploy_*"], "deploy_prod")).toBe(true);
    expect(needsApproval(["echo", "deploy_*"], "echoes")).toBe(false);
    expect(needsApproval(["*"], "anything")).toBe(true);
    expect(needsApproval([], "echo")).toBe(false);
  });

  it("give a child its parent's list plus its own, never fewer", () => {
    expect(childRequirements(["a", "b*"], ["b*", "c"])).toEqual(["a", "b*", "c"]);
    expect(childRequirements(["a"], undefined)).toEqual(["a"]);
    expect(childRequirements(undefined, undefined)).toBeUndefined();
  });

  it("read REQUIRE_APPROVAL as a JSON list, and fail closed on anything else", () => {
    expect(deploymentRequirements(undefined)).toEqual({ patterns: [], invalid: false });
    expect(deploymentRequirements("[]")).toEqual({ patterns: [], invalid: false });
    expect(deploymentRequirements('["mcp__*","deploy"]')).toEqual({
      patterns: ["mcp__*", "deploy"],
      invalid: false,
    });
    for (const bad of ["echo", '{"a":1}', '["a*b"]', "[1]"])
      expect(deploymentRequirements(bad)).toEqual({ patterns: ["*"], invalid: true });
  });
});
