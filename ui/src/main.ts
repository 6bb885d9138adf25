/**
 * @module The dashboard's shell: login (a key typed once, or `#key=` from the URL the CLI prints, traded for a session
 * cookie), the navigation, and a hash router: `#/runs`, `#/rollouts?filters`, `#/rollout/ID`.
 */
import { html } from "htm/preact";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { LoggedOut, login, logout, sessionState } from "./api.js";
import { RolloutPage } from "./rollout-page.js";
import { RolloutsPage } from "./rollouts-page.js";
import { RunsPage } from "./runs-page.js";
import "./style.css";

/** The current hash route. */
function useRoute(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return hash.replace(/^#/, "") || "/runs";
}

/** The login form. */
function Login(props: { onDone: () => void; refused: boolean }) {
  const [refused, setRefused] = useState(props.refused);
  const submit = async (event: Event) => {
    event.preventDefault();
    const key = String(new FormData(event.currentTarget as HTMLFormElement).get("key") ?? "");
    if (await login(key)) props.onDone();
    else setRefused(true);
  };
  return html`<form class="login" onSubmit=${submit}>
    <h2>arclight dashboard</h2>
    <p class="muted">Enter the gateway key or the dashboard key.</p>
    <input type="password" name="key" placeholder="key" autofocus />
    <button type="submit">Log in</button>
    ${refused ? html`<p class="error" id="login-error">Wrong key</p>` : null}
  </form>`;
}

/** The page a route names. */
function Page(props: { route: string }) {
  const [path, query = ""] = props.route.split("?", 2) as [string, string?];
  if (path.startsWith("/rollout/")) return html`<${RolloutPage} id=${decodeURIComponent(path.slice(9))} />`;
  if (path === "/rollouts") return html`<${RolloutsPage} query=${query} />`;
  return html`<${RunsPage} />`;
}

/** The app: login state, navigation, page. */
function App() {
  const [auth, setAuth] = useState<"checking" | "in" | "out" | "refused">("checking");
  const route = useRoute();
  useEffect(() => {
    const fromUrl = /^#key=(.+)$/.exec(location.hash);
    const check = async () => {
      if (fromUrl) {
        // The key rode in the fragment (never sent to the server); drop it from the address bar and history.
        history.replaceState(null, "", `${location.pathname}#/runs`);
        if (!(await login(decodeURIComponent(fromUrl[1] as string)))) return setAuth("refused");
      }
      const state = await sessionState();
      setAuth(state.authenticated ? "in" : "out");
    };
    check().catch(() => setAuth("out"));
    const onError = (event: PromiseRejectionEvent) => {
      if (event.reason instanceof LoggedOut) setAuth("out");
    };
    addEventListener("unhandledrejection", onError);
    return () => removeEventListener("unhandledrejection", onError);
  }, []);
  if (auth === "checking") return html`<p class="muted">…</p>`;
  if (auth !== "in") return html`<${Login} refused=${auth === "refused"} onDone=${() => setAuth("in")} />`;
  const tab = route.startsWith("/rollout") ? "rollouts" : "runs";
  return html`<header>
      <b>arclight</b>
      <a class=${tab === "runs" ? "active" : ""} href="#/runs">Runs</a>
      <a class=${tab === "rollouts" ? "active" : ""} href="#/rollouts">Rollouts</a>
      <span class="spacer"></span>
      <button class="link" onClick=${() => logout().then(() => setAuth("out"))}>log out</button>
    </header>
    <main><${Page} key=${route.split("?")[0]} route=${route} /></main>`;
}

render(html`<${App} />`, document.getElementById("app") as HTMLElement);
