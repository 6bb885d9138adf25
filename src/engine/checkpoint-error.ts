/**
 * @module `CheckpointInvalid`: the error `Engine.loadCheckpoint` (and an engine's own loaders) raise for a directory
 * that cannot be loaded. Engine-independent, so the engine server and the CLI map it without knowing the engine.
 */

/** A checkpoint directory that cannot be loaded: `missing` (nothing there) or `invalid` (anything else wrong). */
export class CheckpointInvalid extends Error {
  /**
   * @param dir - the checkpoint path as given
   * @param kind - `missing` (nothing there) or `invalid`
   * @param reason - what is wrong, e.g. `config.json: vocab: expected number, received undefined`
   */
  constructor(
    readonly dir: string,
    readonly kind: "missing" | "invalid",
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`checkpoint ${dir}: ${reason}`, options);
    this.name = "CheckpointInvalid";
  }
}
