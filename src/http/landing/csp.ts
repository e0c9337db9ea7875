/**
 * Content-Security-Policy of the landing page (CSP Level 3). Everything it loads comes from this
 * origin: no inline script or style (`'unsafe-inline'` is absent, so an injected `<script>` or
 * `style` attribute cannot run), no eval, no frames, no forms, no base URL change, and no framing
 * by other sites. `img-src data:` admits the data URLs uPlot may use; uPlot sets element styles
 * through the CSSOM (`element.style.width = …`), which `style-src` does not govern, and injects no
 * `<style>` element or `style` attribute, so its own stylesheet is enough.
 */
export const LANDING_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')
