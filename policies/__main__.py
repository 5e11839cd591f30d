"""The Nodewright CrossGuard policy pack: `pulumi preview --policy-pack policies`.

The rules live in nodewright.policy (NodePool/EC2NodeClass, shared with
`nodewright policy check`) and nodewright_policies (AWS and stack rules).
"""

import sys
from pathlib import Path

from pulumi_policy import PolicyPack

# The analyzer may start us from another working directory; the rules sit next to this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nodewright_policies.pack import PACK_NAME, build_policies

PolicyPack(name=PACK_NAME, policies=build_policies())
