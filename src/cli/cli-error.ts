/** @module `CliError`: the one error class of the CLI, printed as one line by `main.ts`. */

/**
 * A user-facing CLI failure: printed as one line (`arclight: <message>`) without a stack trace, exit code 2.
 * Throw it for a bad flag, an unreadable config file or a missing resource the user named.
 */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CliError";
  }
}
