import { describe, expect, it } from "vitest";
import { dashboardUrl } from "./url.js";

describe("dashboardUrl", () => {
  it("puts the key in the fragment, encoded", () => {
    expect(dashboardUrl("http://127.0.0.1:8080/", "a b")).toBe("http://127.0.0.1:8080/ui/#key=a%20b");
  });
  it("leaves the key out when empty", () => {
    expect(dashboardUrl("http://h:1", "")).toBe("http://h:1/ui/");
  });
});
