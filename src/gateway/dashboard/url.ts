/**
 * @module The dashboard URL the CLI prints. For a gateway the CLI started itself (a fresh random key), the key rides
 * in the URL's fragment (`#key=`), which browsers never send to the server: the page trades it for a session cookie
 * and removes it from the address bar, like Jupyter's token URL.
 */

/**
 * The URL of a gateway's dashboard.
 * @param gatewayUrl - the gateway's base URL, e.g. `http://127.0.0.1:8080`
 * @param key - the key to embed for a one-click login; "" for none (a gateway the user runs knows its own key)
 * @returns `<gatewayUrl>/ui/` or `<gatewayUrl>/ui/#key=<key>`
 */
export function dashboardUrl(gatewayUrl: string, key: string): string {
  const base = `${gatewayUrl.replace(/\/+$/, "")}/ui/`;
  return key === "" ? base : `${base}#key=${encodeURIComponent(key)}`;
}
