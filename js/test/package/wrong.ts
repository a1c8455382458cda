// Must NOT type-check: "engram/sqlite" exports sqliteStore only, so this
// import fails at run time and tsc must say so (TS2305). Run by check.sh.
import { Memory } from "engram/sqlite";

export const open = Memory.open;
