// One series of a Causeway's Prometheus /metrics, as the e2e tests read it.

/**
 * The sum of the series `name` whose labels include every one of `labels` (0 when there is none),
 * on the replica whose admin port is `adminUrl`.
 */
export async function metricValue(
  adminUrl: string | undefined,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
