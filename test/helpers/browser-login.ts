// A scripted browser for the OAuth tests' authorization-code flows.

/**
 * A user at oidc-provider's dev pages, as a browser would be: follows redirects by hand with the
 * cookies they set, fills the login form (any account, any password), approves the consent
 * form, and stops at the redirect to the client (`redirectUri`), returning it and the forms' prompts.
 */
export async function scriptedLogin(
  authorizationUrl: URL,
  account: string,
  redirectUri: string,
): Promise<{ callback: URL; prompts: string[] }> {
  const prompts: string[] = [];
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  let form: URLSearchParams | undefined;
  for (let step = 0; step < 12; step++) {
    const res = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form,
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attrs] = line.split(';');
      const name = pair.slice(0, pair.indexOf('=')).trim();
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      const expires = attrs.map((a) => /^\s*expires=(.*)$/i.exec(a)?.[1]).find((x) => x !== undefined);
      if (value === '' || (expires !== undefined && Date.parse(expires) <= Date.now())) jar.delete(name);
      else jar.set(name, value);
    }
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location !== null) {
      await res.body?.cancel();
      const next = new URL(location, url);
      if (`${next.origin}${next.pathname}` === redirectUri) return { callback: next, prompts };
      url = next;
      form = undefined;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`login page answered ${res.status}: ${html.slice(0, 500)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (action === undefined) throw new Error(`no form on the page: ${html.slice(0, 500)}`);
    form = new URLSearchParams();
    for (const input of html.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g))
      form.set(input[1]!, input[2]!);
    if (/name="login"/.test(html)) {
      form.set('login', account);
      form.set('password', 'any password');
    }
    prompts.push(form.get('prompt') ?? '');
    url = new URL(action.replaceAll('&amp;', '&'), url);
  }
  throw new Error('the login did not come back to the client');
}
