/*
 * Landing page script of Payload Tools, served as /assets/landing.js and loaded with `defer` after
 * uPlot. It refreshes the live figures from GET /stats every few seconds and draws the 7-day chart.
 *
 * The page's Content-Security-Policy has no 'unsafe-inline': this file only sets text content and
 * attributes, and builds elements with DOM methods (never innerHTML). uPlot sets sizes through the
 * CSSOM, which the CSP allows. Figures are formatted as in src/http/landing/format.ts.
 */
;(() => {
  const live = document.getElementById('live')
  if (!live) return

  const refreshMs = (Number(live.dataset.refreshSeconds) || 5) * 1000
  const UNAVAILABLE = 'Unavailable'
  const notice = live.querySelector('[data-role="notice"]')
  const stateLabel = live.querySelector('[data-role="state"]')
  const updated = live.querySelector('[data-role="updated"]')
  const dailyBody = live.querySelector('[data-role="daily"]')
  const chartBox = live.querySelector('[data-role="chart"]')
  const reduceMotion = window.matchMedia('(prefers-reduced-motion: reduce)')
  const darkScheme = window.matchMedia('(prefers-color-scheme: dark)')

  const groupDigits = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  const formats = {
    count: (value) => groupDigits(value),
    rate: (value) => `${(value * 100).toFixed(1)}%`,
  }
  const ZERO = { calls: 0, revenue: { atomic: '0', usdc: '0' } }

  /** Reads a dotted path, e.g. `revenue.last_24h`, from the /stats object. */
  const read = (object, path) =>
    path.split('.').reduce((node, key) => (node == null ? undefined : node[key]), object)

  /** A /stats body this script can show; anything else is treated as unavailable. */
  const isStats = (body) =>
    body !== null &&
    typeof body === 'object' &&
    typeof body.paid_calls === 'number' &&
    typeof body.generated_at === 'string' &&
    body.revenue !== null &&
    typeof body.revenue === 'object' &&
    body.networks !== null &&
    typeof body.networks === 'object' &&
    Array.isArray(body.daily)

  /** Sets an element's text when it changed, with a short highlight (unless motion is reduced). */
  function setText(element, text, highlight) {
    if (!element || element.textContent === text) return
    element.textContent = text
    if (highlight && !reduceMotion.matches && typeof element.animate === 'function') {
      const accent = getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()
      element.animate([{ color: accent }, { color: getComputedStyle(element).color }], {
        duration: 1200,
        easing: 'ease-out',
      })
    }
  }

  /** Shows an amount as `<span class="amount">0.003</span> <span class="unit">USDC</span>`. */
  function setMoney(element, money, highlight) {
    if (!element) return
    let amount = element.querySelector('.amount')
    if (!amount) {
      amount = cell('span', '', 'amount')
      element.replaceChildren(amount, ' ', cell('span', 'USDC', 'unit'))
    }
    setText(amount, money.usdc, highlight)
  }

  function cell(tag, text, className) {
    const element = document.createElement(tag)
    element.textContent = text
    if (className) element.className = className
    return element
  }

  function showDailyTable(daily) {
    if (!dailyBody) return
    const rows = daily
      ? daily.map((day) => {
          const row = document.createElement('tr')
          const head = document.createElement('th')
          head.scope = 'row'
          const time = cell('time', day.date)
          time.dateTime = day.date
          head.append(time)
          row.append(head, cell('td', groupDigits(day.calls), 'num'))
          row.append(cell('td', day.revenue.usdc, 'num'))
          return row
        })
      : [cell('tr', '')]
    if (!daily) {
      const only = cell('td', UNAVAILABLE)
      only.colSpan = 3
      rows[0].append(only)
    }
    dailyBody.replaceChildren(...rows)
  }

  // ---- Chart (uPlot, served from this origin) ----

  let chart
  let labels = []
  let lastDaily

  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim()
  const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
  /** `2025-06-16` -> `Mon 16` (the dates are UTC days). */
  const dayLabel = (date) => {
    const day = new Date(`${date}T00:00:00Z`)
    return `${WEEKDAYS[day.getUTCDay()]} ${day.getUTCDate()}`
  }
  const trim = (value) => String(Number(value.toFixed(6)))

  /**
   * The day the legend shows: the one under the pointer, else the latest (uPlot passes no index
   * while the pointer is off the chart, and the legend would read "Day: – Calls: –").
   */
  const shownDay = (u, i) => i ?? u.data[0].length - 1
  const shown = (u, s, i, format) => {
    const v = u.data[s][shownDay(u, i)]
    return v == null ? '–' : format(v)
  }

  function chartData(daily) {
    return [
      daily.map((_, i) => i),
      daily.map((day) => day.calls),
      daily.map((day) => Number(day.revenue.usdc)),
    ]
  }

  function chartOptions(width) {
    const axis = css('--chart-axis')
    const grid = css('--chart-grid')
    const font = '12px system-ui, sans-serif'
    const calls = css('--chart-calls')
    const revenue = css('--chart-revenue')
    return {
      width,
      height: 240,
      padding: [12, 4, 0, 4],
      scales: {
        x: { time: false, range: () => [-0.5, labels.length - 0.5] },
        calls: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.2))] },
        usdc: { range: (_u, _min, max) => [0, Math.max(0.004, max * 1.2)] },
      },
      axes: [
        {
          stroke: axis,
          font,
          grid: { show: false },
          ticks: { show: false },
          splits: () => labels.map((_, i) => i),
          // Two lines ("Mon" over "16") where seven one-line labels would collide.
          values: (u, splits) =>
            splits.map((i) => (labels[i] ?? '').replace(' ', u.width < 480 ? '\n' : ' ')),
        },
        {
          scale: 'calls',
          stroke: axis,
          font,
          size: 44,
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 1e5, 1e6],
          grid: { stroke: grid, width: 1 },
          ticks: { show: false },
          values: (_u, splits) => splits.map((v) => groupDigits(v)),
        },
        {
          scale: 'usdc',
          side: 1,
          stroke: axis,
          font,
          size: 56,
          grid: { show: false },
          ticks: { show: false },
          values: (_u, splits) => splits.map(trim),
        },
      ],
      series: [
        { label: 'Day', value: (u, _v, _s, i) => labels[shownDay(u, i)] ?? '–' },
        {
          label: 'Calls',
          scale: 'calls',
          stroke: calls,
          fill: calls,
          width: 0,
          paths: uPlot.paths.bars({ size: [0.55, 56] }),
          points: { show: false },
          value: (u, _v, s, i) => shown(u, s, i, groupDigits),
        },
        {
          label: 'Revenue (USDC)',
          scale: 'usdc',
          stroke: revenue,
          width: 2.5,
          points: { show: true, size: 7, fill: revenue, stroke: revenue },
          value: (u, _v, s, i) => shown(u, s, i, trim),
        },
      ],
      cursor: { drag: { x: false, y: false }, points: { size: 9 } },
      legend: { live: true },
    }
  }

  function drawChart(daily) {
    lastDaily = daily
    if (!chartBox || typeof uPlot !== 'function') return
    labels = daily.map((day) => dayLabel(day.date))
    const width = Math.max(chartBox.clientWidth, 240)
    if (chart) chart.setData(chartData(daily))
    else chart = new uPlot(chartOptions(width), chartData(daily), chartBox)
  }

  if (chartBox && typeof ResizeObserver === 'function') {
    new ResizeObserver(() => {
      if (chart && chartBox.clientWidth > 0) {
        chart.setSize({ width: chartBox.clientWidth, height: 240 })
      }
    }).observe(chartBox)
  }

  // The canvas takes its colours when drawn: redraw when the colour scheme changes.
  darkScheme.addEventListener('change', () => {
    chart?.destroy()
    chart = undefined
    if (lastDaily) drawChart(lastDaily)
  })

  // ---- Figures ----

  function showStats(stats, highlight) {
    live.dataset.state = 'available'
    setText(stateLabel, 'Live')
    setText(notice, '')
    for (const element of live.querySelectorAll('[data-stat]')) {
      const value = read(stats, element.dataset.stat)
      const format = formats[element.dataset.format]
      if (element.dataset.format === 'usdc' && value) setMoney(element, value, highlight)
      else if (typeof value === 'number' && format) setText(element, format(value), highlight)
    }
    for (const card of live.querySelectorAll('[data-network]')) {
      const entry = stats.networks[card.dataset.network] ?? ZERO
      setText(card.querySelector('[data-field="calls"]'), formats.count(entry.calls), highlight)
      setMoney(card.querySelector('[data-field="revenue"]'), entry.revenue, highlight)
    }
    if (updated) {
      updated.dateTime = stats.generated_at
      setText(updated, `${stats.generated_at.slice(11, 19)} UTC`)
    }
    showDailyTable(stats.daily)
    drawChart(stats.daily)
  }

  function showUnavailable() {
    live.dataset.state = 'unavailable'
    setText(stateLabel, UNAVAILABLE)
    setText(notice, live.dataset.notice ?? UNAVAILABLE)
    for (const element of live.querySelectorAll('[data-stat], [data-network] [data-field]')) {
      setText(element, UNAVAILABLE)
    }
    showDailyTable(undefined)
  }

  let timer
  let busy = false
  let first = true

  async function refresh() {
    if (busy) return
    busy = true
    clearTimeout(timer)
    try {
      const response = await fetch('/stats', {
        headers: { Accept: 'application/json' },
        cache: 'no-store',
      })
      const body = response.ok ? await response.json() : undefined
      if (isStats(body)) showStats(body, !first)
      else showUnavailable()
    } catch {
      showUnavailable()
    } finally {
      busy = false
      first = false
      // A hidden tab stops polling; it refreshes at once when shown again.
      if (!document.hidden) timer = setTimeout(refresh, refreshMs)
    }
  }

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) refresh()
  })
  refresh()
})()
