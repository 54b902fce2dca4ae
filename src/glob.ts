// Name patterns of route and scope rules: literal but for `*`, which matches any run of
// characters (newlines included), anchored at both ends.

export function globToRegExp(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}
