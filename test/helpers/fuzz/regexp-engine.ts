import { setFlagsFromString } from 'node:v8'

// Imported first by every fuzz test file, so that it runs before any pattern of ours compiles:
// V8 then falls back to its linear-time (breadth-first) regexp engine when a backtracking match
// exceeds --regexp-backtracks-before-fallback (50,000 by default), as production will set it for
// the tool workers. The flag only helps patterns the experimental engine can run (no
// backreferences or lookarounds); the fuzzers' pattern grammar avoids catastrophic ones anyway.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks')
