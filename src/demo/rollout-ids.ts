/** @module A demo run's rollout ids (run name plus suffix), and the longest ones, which bound the name's length. */
import { rolloutOnceId } from "../trainer/rollouts-once.js";
import { longestTrainingRolloutIds } from "../trainer/run-name-room.js";
import { DEMO_MODEL, type DemoBudget, demoTrainerConfig, readDemoProblems } from "./settings.js";

/** Rollout id prefix of the teacher's demonstrations. */
export function teacherPrefix(runName: string): string {
  return `${runName}-teacher`;
}

/** Rollout id prefix of the demo's own validation before RL, or after it when the loop did not validate last. */
export function demoValidationPrefix(runName: string, when: "before" | "after"): string {
  return `${runName}-${when}`;
}

/** The longest rollout ids a run with this name and budget creates, built as the run builds them. */
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
