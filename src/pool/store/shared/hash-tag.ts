// Redis keys built on one id share its Cluster hash tag, so a script on them touches one slot.

/** `{`, `}` and `%` escaped, so the id is one whole hash tag and no two ids collide. */
export function tag(id: string): string {
  return id.replace(/%/g, '%25').replace(/\{/g, '%7B').replace(/\}/g, '%7D');
}
