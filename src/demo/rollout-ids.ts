/**
 * @module The rollout ids of one demo run: each is the run name followed by a suffix — the teacher's demonstrations,
 * the validations before and after RL, and the training loop's own train and validation rollouts — and the longest
 * ids that set how long the name may be.
 */
import { rolloutOnceId } from "../trainer/rollouts-once.js";
import { longestTrainingRolloutIds } from "../trainer/run-name-room.js";
import { DEMO_MODEL, type DemoBudget, demoTrainerConfig, readDemoProblems } from "./settings.js";

/**
 * Rollout id prefix of the teacher's demonstrations (ids `PREFIX-dINDEX-0`).
 * @param runName - the demo's `--name`
 */
export function teacherPrefix(runName: string): string {
  return `${runName}-teacher`;
}

/**
 * Rollout id prefix of the demo's own validation before RL, or after RL when the loop did not validate at its last
 * step (ids `PREFIX-dINDEX-0`).
 * @param runName - the demo's `--name`
 * @param when - before or after RL
 */
export function demoValidationPrefix(runName: string, when: "before" | "after"): string {
  return `${runName}-${when}`;
}

/**
 * The longest rollout ids a demo run with this name and budget creates: the demonstration and the validation
 * problems with the largest index, and the training loop's longest ids ({@link longestTrainingRolloutIds}).
 * @param runName - the demo's `--name`
 * @param budget - demonstrations, steps, group sizes, validation problems
 * @returns the ids, built with the functions the run builds them with
 */
export function longestDemoRolloutIds(runName: string, budget: Readonly<DemoBudget>): string[] {
  // The context only splits prompt and response lengths: any engine's gives the same ids.
  const config = demoTrainerConfig(runName, budget, DEMO_MODEL.context);
  const { train, val } = readDemoProblems(config, budget);
  const lastIndex = (items: readonly { index: number }[]) =>
    items.reduce((last, item) => Math.max(last, item.index), 0);
  const lastDemonstration = lastIndex(train.slice(0, budget.demonstrations));
  return [
    rolloutOnceId(teacherPrefix(runName), lastDemonstration),
    rolloutOnceId(demoValidationPrefix(runName, "before"), lastIndex(val)),
    rolloutOnceId(demoValidationPrefix(runName, "after"), lastIndex(val)),
    ...longestTrainingRolloutIds(config, train, val),
  ];
}
