/** @module Errors of opening a store: a bad `--store` spec, an unreadable or foreign database file, a newer schema. */

/** A store could not be opened; the message names the spec or file and what was wrong, `cause` the driver's error. */
export class StoreOpenError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreOpenError";
  }
}
