// Imported first by the demo (ES modules run their imports in order), so that the logger is made
// for a person at a terminal: `npm run dev` logs pretty lines unless LOG_FORMAT says otherwise.
process.env.LOG_FORMAT ??= 'pretty'
