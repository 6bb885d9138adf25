import { describe, expect, it } from "vitest";
import { DashboardSessions, readCookie } from "./sessions.js";

describe("DashboardSessions", () => {
  const sessions = () => new DashboardSessions({ gatewayKey: "k", dashboardKey: "", ttlMs: 1000 });

  it("opens a session only for a configured key", () => {
    const s = new DashboardSessions({ gatewayKey: "k", dashboardKey: "view" });
    expect(s.login("k")).toMatch(/^[\w-]{43}$/);
    expect(s.login("view")).toBeDefined();
    expect(s.login("")).toBeUndefined();
    expect(s.login("x")).toBeUndefined();
  });

  it("an empty dashboard key logs nobody in", () => {
    expect(sessions().login("")).toBeUndefined();
  });

  it("a session expires after its lifetime", () => {
    const s = sessions();
    const token = s.login("k", 0) as string;
    expect(s.isValid(`arclight_session=${token}`, 999)).toBe(true);
    expect(s.isValid(`arclight_session=${token}`, 1000)).toBe(false);
  });
});

describe("readCookie", () => {
  it("finds one cookie among several", () => {
    expect(readCookie("a=1; arclight_session=xyz; b=2", "arclight_session")).toBe("xyz");
    expect(readCookie("a=1", "arclight_session")).toBeUndefined();
    expect(readCookie(undefined, "a")).toBeUndefined();
  });
});
