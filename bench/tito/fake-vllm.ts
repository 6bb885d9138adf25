/**
 * @module The tito bench's fake vLLM in its own process (so its tokenising is not counted as gateway CPU): starts a
 * TokenVllm with the repository's tokenizer and the calculator model, prints its URL on stdout, runs until killed.
 */
import { calcModel } from "../../src/gateway/proxy/tito/testing/stack-rollouts.js";
import { TokenVllm } from "../../src/gateway/proxy/tito/testing/token-vllm.js";
import { QWEN2_TOKENIZER_DIR } from "../../src/gateway/proxy/tito/testing/tokenizer-fixture.js";

const fake = await TokenVllm.start(QWEN2_TOKENIZER_DIR, calcModel);
process.stdout.write(`${fake.url}\n`);
