"""The engine's block description of a config.json, for runs outside the worker (bench, tools).

The engine is the one reader of config.json (it refuses keys it would compute
differently); this asks it through node (packages/trainer-torch/describe.mjs),
so a standalone run builds exactly the model a job would.
"""

import json
import os
import subprocess

DESCRIBE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "describe.mjs")


def describe(config, node="node"):
    """The description of a config (a dict, or a path to config.json or a model folder)."""
    if isinstance(config, dict):
        run = subprocess.run([node, DESCRIBE, "-"], input=json.dumps(config), capture_output=True, text=True)
    else:
        run = subprocess.run([node, DESCRIBE, str(config)], capture_output=True, text=True)
    if run.returncode != 0:
        raise ValueError(run.stderr.strip() or f"{DESCRIBE} failed")
    return json.loads(run.stdout)
