/**
 * Builds robots.txt (RFC 9309): crawlers may fetch the landing page, the public statistics and the
 * discovery files; everything else (paid POST endpoints, /mcp, /health) is disallowed, since a GET
 * there only yields a 405. The most specific (longest) matching rule wins, and `$` anchors the end
 * of the path, so `Allow: /$` admits the landing page alone.
 *
 * @param publicPaths - free GET paths to allow, e.g. ["/openapi.json", "/llms.txt"]
 * @example
 * buildRobotsTxt(['/llms.txt'])
 * // 'User-agent: *\nAllow: /$\nAllow: /llms.txt$\nDisallow: /\n'
 */
export function buildRobotsTxt(publicPaths: readonly string[]): string {
  const allow = publicPaths.map((path) => `Allow: ${path}$`)
  return ['User-agent: *', 'Allow: /$', ...allow, 'Disallow: /', ''].join('\n')
}
