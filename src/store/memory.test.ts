import { MemoryStore } from "./memory.js";
import { runStoreContract } from "./store.contract.js";

runStoreContract("MemoryStore", () => new MemoryStore());
