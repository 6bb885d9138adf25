"""The shipped projects under `data/` are the tasks' repositories (their tests are run in sandboxes), not tests of
this recipe: pytest does not collect them."""

collect_ignore = ["data"]
