"""The operator's settings, read as Karpenter's chart sets them: environment variables with
matching flags, flags winning.

Each `Option` knows its flag, its variable, its default and how to parse a value, so
`--help` documents all of them from one table and a bad value, from either source, is
reported as `VARIABLE='value': what is wrong` (exit code 2 in the CLI).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import re
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# Durations in Go's syntax, as Karpenter's flags take them; negatives are refused.
from nodewright.api.formats import parse_duration
from nodewright.cloud.sim.settings import SCENARIO_KEYS as SIM_TIMING_KEYS
from nodewright.cloud.sim.settings import SimSettings
from nodewright.cluster.kube.access import LEADER_ELECTION_LEASE
from nodewright.cluster.kube.informer import DEFAULT_WATCH_READ_TIMEOUT
from nodewright.cluster.kube.transport import DEFAULT_BURST, DEFAULT_QPS

Cloud = Literal["aws", "sim"]
MinValuesPolicy = Literal["Strict", "BestEffort"]
PreferencePolicy = Literal["Respect", "Ignore"]
LOG_LEVELS = ("debug", "info", "warning", "error")
# Karpenter's gates and their defaults (pkg/operator/options).
FEATURE_GATES: Mapping[str, bool] = {
    "NodeRepair": False,
    "ReservedCapacity": True,
    "SpotToSpotConsolidation": False,
    "NodeOverlay": False,
    "StaticCapacity": False,
    "CapacityBuffer": False,
}
_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_KUBE_CLIENT_QPS = int(DEFAULT_QPS)
DEFAULT_KUBE_CLIENT_BURST = DEFAULT_BURST
# EKS's rule for its cluster names, and dots: a cluster whose control plane is not EKS's
# (kops) is named by a DNS name, which Karpenter's CLUSTER_NAME takes as it is.
_CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,99}$")


class ConfigError(ValueError):
    """A setting with a bad value; the text names the variable (or flag) and the value."""

    def __init__(self, source: str, value: str, problem: str) -> None:
        super().__init__(f"{source}={value!r}: {problem}")
        self.source = source
        self.value = value


@dataclass(frozen=True)
class OperatorConfig:
    cluster_name: str
    cloud: Cloud = "aws"
    kubeconfig: str | None = None
    cluster_endpoint: str | None = None
    # Karpenter's CLUSTER_CA_BUNDLE (base64 PEM nodes trust the API server with) and
    # EKS_CONTROL_PLANE (the Kubernetes version comes from EKS, not the API server).
    cluster_ca_bundle: str | None = None
    eks_control_plane: bool = False
    interruption_queue: str | None = None
    region: str | None = None
    batch_idle_duration: float = 1.0
    batch_max_duration: float = 10.0
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    log_level: str = "info"
    leader_elect: bool = True
    metrics_port: int = 8080
    health_probe_port: int = 8081
    leader_election_name: str = LEADER_ELECTION_LEASE
    leader_election_namespace: str = "nodewright"
    identity: str = ""
    sim_timing: SimSettings | None = None
    kube_client_qps: int = DEFAULT_KUBE_CLIENT_QPS
    kube_client_burst: int = DEFAULT_KUBE_CLIENT_BURST
    watch_read_timeout: float = DEFAULT_WATCH_READ_TIMEOUT
    min_values_policy: MinValuesPolicy = "Strict"
    # Wall seconds a provisioning solve may spend improving its plan (None: no deadline).
    solve_deadline: float | None = None
    # Karpenter's AWS settings: memory the hypervisor keeps (a fraction of the type's
    # memory), ENIs the VPC CNI's custom networking keeps from pods, no Pricing API.
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0
    isolated_vpc: bool = False
    # Karpenter's AWS settings: skip the EC2NodeClass dry-run authorization checks; how long
    # resolved AMIs and subnets are kept.
    disable_dry_run: bool = False
    # Karpenter's ENABLE_ZONAL_SHIFT: ARC's zonal shifts on the cluster make their zones'
    # offerings unavailable (and NodePools get ZonalShiftActive/Cleared events).
    enable_zonal_shift: bool = False
    ami_refresh_interval: float = 60.0
    subnet_refresh_interval: float = 60.0
    # Ignore: preferred node/pod affinities and ScheduleAnyway spreads are dropped before
    # scheduling (Karpenter's PREFERENCE_POLICY).
    preference_policy: PreferencePolicy = "Respect"
    # Karpenter's IGNORE_DRA_REQUESTS: pods claiming devices through Dynamic Resource
    # Allocation get no capacity, DaemonSets claiming devices count in no overhead.
    ignore_dra_requests: bool = True
    # Karpenter's DISABLE_CLUSTER_STATE_OBSERVABILITY: the pod, NodePool, Node and
    # status-condition metrics controllers are not run.
    cluster_state_observability: bool = True
    # Karpenter's ENABLE_PROFILING: /debug/pprof/ on the metrics port (operator.profiling).
    enable_profiling: bool = False
    # Karpenter's LOG_OUTPUT_PATHS / LOG_ERROR_OUTPUT_PATHS: `stdout`, `stderr` or files;
    # the log lines go to the first, the logger's own failures to the second (as zap).
    log_output_paths: tuple[str, ...] = ("stdout",)
    log_error_output_paths: tuple[str, ...] = ("stderr",)
    # Accepted as Karpenter's chart sets them (docs/karpenter-differences.md says what
    # each does here): the container's memory limit in bytes (-1: none), its CPU request
    # in millicores (<= 0: 1000), the webhook Service name, controller warm-up.
    memory_limit: int = -1
    cpu_requests: int = 1000
    karpenter_service: str = ""
    disable_controller_warmup: bool = True


# --- parsers: text -> value, ValueError with the reason -----------------------------------


def _positive_duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds <= 0:
        raise ValueError("must be longer than 0s")
    return seconds


def parse_refresh_interval(text: str) -> float:
    """A duration of at least a minute (Karpenter's AMI/SUBNET_REFRESH_INTERVAL rule)."""
    seconds = parse_duration(text)
    if seconds < 60:
        raise ValueError("must be at least 1m")
    return seconds


def parse_solve_deadline(text: str) -> float | None:
    """A duration; 0 turns the deadline off."""
    return parse_duration(text) or None


def parse_positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("not a whole number") from None
    if value < 1:
        raise ValueError("must be at least 1")
    return value


def parse_bool(text: str) -> bool:
    """Go's strconv.ParseBool spellings (as Karpenter reads its variables), and yes/no."""
    lowered = text.strip().lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise ValueError("must be true or false")


def parse_int64(text: str) -> int:
    """A whole number that fits Go's int64 (Karpenter's MEMORY_LIMIT, CPU_REQUESTS)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("not a whole number") from None
    if not -(2**63) <= value < 2**63:
        raise ValueError("out of range (a 64-bit whole number)")
    return value


def parse_cpu_requests(text: str) -> int:
    """Millicores; 0 or less means Karpenter's default, 1000."""
    value = parse_int64(text)
    return value if value > 0 else 1000


def parse_output_paths(text: str) -> tuple[str, ...]:
    """zap's output paths: comma-separated `stdout`, `stderr` or file paths (a
    `file://` URL is taken as its path)."""
    paths = tuple(part.strip() for part in text.split(","))
    if not paths or any(not path for path in paths):
        raise ValueError("a comma-separated list of stdout, stderr or file paths, "
                         "with no empty entry")
    return tuple(path.removeprefix("file://") for path in paths)


def parse_port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ValueError("not a port number") from None
    if not 0 <= port <= 65535:
        raise ValueError("must be between 0 and 65535 (0 picks a free port)")
    return port


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`Name=true,Other=false` over Karpenter's defaults; unknown names are errors."""
    gates = dict(FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, separator, raw = item.partition("=")
        if not separator:
            raise ValueError(f"{item!r} is not Name=true|false")
        if name.strip() not in FEATURE_GATES:
            raise ValueError(
                f"unknown feature gate {name.strip()!r} (known: {', '.join(FEATURE_GATES)})")
        try:
            gates[name.strip()] = parse_bool(raw)
        except ValueError:
            raise ValueError(f"{name.strip()}: {raw!r} must be true or false") from None
    return gates


def parse_min_values_policy(text: str) -> MinValuesPolicy:
    if text == "Strict":
        return "Strict"
    if text == "BestEffort":
        return "BestEffort"
    raise ValueError("must be Strict or BestEffort")


def parse_preference_policy(text: str) -> PreferencePolicy:
    if text == "Respect":
        return "Respect"
    if text == "Ignore":
        return "Ignore"
    raise ValueError("must be Respect or Ignore")


def parse_ignore_dra_requests(text: str) -> bool:
    """Only true (Karpenter's default): false asks for DRA device scheduling (ResourceSlices,
    device allocation), which nodewright does not have; capacity launched by CPU and
    memory alone would never run those pods."""
    if not parse_bool(text):
        raise ValueError("false asks for Dynamic Resource Allocation scheduling "
                         "(ResourceSlices, device allocation), which nodewright does not "
                         "implement; leave it true")
    return True


def parse_overhead_fraction(text: str) -> float:
    """A fraction of memory, as Karpenter takes it (0.075 is 7.5 %)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError("not a number (a fraction such as 0.075)") from None
    if not 0 <= value < 1:
        raise ValueError("must be at least 0 and below 1 (a fraction such as 0.075)")
    return value


def parse_non_negative_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ValueError("not a whole number") from None
    if value < 0:
        raise ValueError("must be 0 or more")
    return value


def parse_log_level(text: str) -> str:
    """Karpenter's levels (an empty value is info), and warning."""
    level = text.strip().lower() or "info"
    level = "warning" if level == "warn" else level
    if level not in LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
    return level


def parse_cloud(text: str) -> str:
    if text not in ("aws", "sim"):
        raise ValueError("must be aws or sim")
    return text


def parse_cluster_name(text: str) -> str:
    if not _CLUSTER_NAME.match(text):
        raise ValueError("a cluster name: letters, digits, '-', '_' and '.', starting with a "
                         "letter or digit, at most 100")
    return text


def parse_endpoint(text: str) -> str:
    if not re.match(r"^https://[^\s/]+", text):
        raise ValueError("must be the API server's https:// URL")
    return text


def parse_ca_bundle(text: str) -> str:
    """A base64-encoded PEM bundle, as EKS's certificateAuthority.data and kubeconfig's
    certificate-authority-data carry it."""
    try:
        pem = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError(f"must be the base64-encoded PEM CA bundle ({error})") from error
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise ValueError("must be the base64-encoded PEM CA bundle: decoded, it holds no "
                         "-----BEGIN CERTIFICATE----- block")
    return text.strip()


def parse_sim_timing(text: str) -> SimSettings:
    """`launchDelay=2s,registrationDelay=1s,...`: the simulated EC2's timing knobs, named as
    a scenario's settings name them."""
    values: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, separator, raw = item.partition("=")
        if not separator:
            raise ValueError(f"{item!r} is not key=duration")
        if key.strip() not in SIM_TIMING_KEYS:
            raise ValueError(f"unknown key {key.strip()!r} (known: {', '.join(SIM_TIMING_KEYS)})")
        values[key.strip()] = raw.strip()
    try:
        return SimSettings.from_scenario(values, where="")
    except ValueError as error:
        raise ValueError(str(error).lstrip(".")) from None


def _text(text: str) -> str:
    return text


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    flag: str
    env: str
    help: str
    parse: Callable[[str], Any] = _text
    default: str | None = None
    metavar: str | None = None
    # A Karpenter boolean flag (every BoolVarWithEnv, core's and the AWS provider's): given
    # alone (`--enable-profiling`, `--isolated-vpc`) it means true.
    switch: bool = False
    # The default --help shows when `default` is None because `load` settles it.
    shown_default: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("--cloud", "NODEWRIGHT_CLOUD", "aws: launch EC2 instances (production); sim: the "
           "simulated EC2, whose instances become Nodes the controller registers and keeps "
           "alive itself", parse_cloud, "aws", "aws|sim"),
    Option("--kubeconfig", "KUBECONFIG", "kubeconfig file; unset: the in-cluster service "
           "account, else ~/.kube/config", metavar="PATH"),
    Option("--cluster-name", "CLUSTER_NAME", "the EKS cluster's name (tags, discovery); "
           "required", parse_cluster_name, metavar="NAME"),
    Option("--cluster-endpoint", "CLUSTER_ENDPOINT", "the API server URL nodes join "
           "(default: looked up with eks:DescribeCluster)", parse_endpoint, metavar="URL"),
    Option("--cluster-ca-bundle", "CLUSTER_CA_BUNDLE", "the base64 PEM CA bundle nodes trust "
           "the API server with (default: looked up with eks:DescribeCluster)",
           parse_ca_bundle, metavar="BASE64"),
    Option("--eks-control-plane", "EKS_CONTROL_PLANE", "the control plane is EKS's: the "
           "Kubernetes version comes from eks:DescribeCluster, not the API server's /version",
           parse_bool, "false", "BOOL", switch=True),
    Option("--interruption-queue", "INTERRUPTION_QUEUE", "SQS queue with EC2 interruption "
           "events (unset: interruption handling off; not read with --cloud sim, whose "
           "simulated EC2 has a queue of its own)", metavar="NAME"),
    Option("--aws-region", "AWS_REGION", "AWS region (default: the SDK's, or us-east-1 with "
           "--cloud sim)", metavar="REGION"),
    Option("--batch-idle-duration", "BATCH_IDLE_DURATION", "end a provisioning batch after "
           "this long without new pending pods", _positive_duration, "1s", "DURATION"),
    Option("--batch-max-duration", "BATCH_MAX_DURATION", "the longest a provisioning batch "
           "waits", _positive_duration, "10s", "DURATION"),
    Option("--feature-gates", "FEATURE_GATES", "Name=true|false,... over the defaults "
           + ",".join(f"{k}={str(v).lower()}" for k, v in FEATURE_GATES.items()),
           parse_feature_gates, "", "GATES"),
    Option("--log-level", "LOG_LEVEL", "debug, info, warning or error", parse_log_level,
           "info", "LEVEL"),
    Option("--disable-leader-election", "DISABLE_LEADER_ELECTION", "run without a leader "
           "Lease (only when a single replica runs): every replica would write", parse_bool,
           metavar="BOOL", switch=True, shown_default="false"),
    Option("--leader-elect", "LEADER_ELECT", "nodewright's name for the opposite of "
           "--disable-leader-election: hold a coordination.k8s.io Lease so one replica "
           "writes at a time (both may be set if they agree)", parse_bool, metavar="BOOL",
           switch=True, shown_default="true"),
    Option("--disable-cluster-state-observability", "DISABLE_CLUSTER_STATE_OBSERVABILITY",
           "do not run the cluster state metrics controllers (karpenter_pods_*, "
           "karpenter_nodepools_*, karpenter_nodes_* and the operator status-condition "
           "metrics)", parse_bool, "false", "BOOL", switch=True),
    Option("--enable-profiling", "ENABLE_PROFILING", "serve /debug/pprof/ on the metrics "
           "port: every thread's stack and a sampled CPU profile (folded stacks)",
           parse_bool, "false", "BOOL", switch=True),
    Option("--log-output-paths", "LOG_OUTPUT_PATHS", "where log lines go: comma-separated "
           "stdout, stderr or file paths (appended to)", parse_output_paths, "stdout",
           "PATHS"),
    Option("--log-error-output-paths", "LOG_ERROR_OUTPUT_PATHS", "where the logger reports "
           "its own failures (a line it could not write or format), as zap's "
           "ErrorOutputPaths: comma-separated stdout, stderr or file paths",
           parse_output_paths, "stderr", "PATHS"),
    Option("--memory-limit", "MEMORY_LIMIT", "the container's memory limit in bytes, as "
           "Karpenter's chart sets it (-1: none); above 0, a warning is logged when the "
           "process's resident memory passes 90%% of it", parse_int64, "-1", "BYTES"),
    Option("--cpu-requests", "CPU_REQUESTS", "the container's CPU request in millicores, as "
           "Karpenter's chart sets it (0 or less: 1000); sizes the workers of the "
           "controllers Karpenter sizes with it, up to a ceiling",
           parse_cpu_requests, "1000", "MILLICORES"),
    Option("--karpenter-service", "KARPENTER_SERVICE", "Karpenter's webhook Service name; "
           "accepted, unused (nodewright has no webhook)", default="", metavar="NAME"),
    Option("--disable-controller-warmup", "DISABLE_CONTROLLER_WARMUP", "accepted for "
           "Karpenter's chart; standby replicas always keep warm caches here", parse_bool,
           "true", "BOOL", switch=True),
    Option("--metrics-port", "METRICS_PORT", "port of the Prometheus /metrics endpoint",
           parse_port, "8080", "PORT"),
    Option("--health-probe-port", "HEALTH_PROBE_PORT", "port of /healthz and /readyz",
           parse_port, "8081", "PORT"),
    Option("--leader-election-name", "LEADER_ELECTION_NAME", "name of the leader Lease "
           "(the RBAC rules name this one)", default=LEADER_ELECTION_LEASE, metavar="NAME"),
    Option("--leader-election-namespace", "LEADER_ELECTION_NAMESPACE", "namespace of the "
           "leader Lease (default: POD_NAMESPACE, else the service account's namespace)",
           metavar="NAMESPACE"),
    Option("--kube-client-qps", "KUBE_CLIENT_QPS", "requests a second to the API server, "
           "on average (client-side limit; watch streams count once, when they open)",
           parse_positive_int, str(DEFAULT_KUBE_CLIENT_QPS), "QPS"),
    Option("--kube-client-burst", "KUBE_CLIENT_BURST", "requests to the API server allowed "
           "at once above the QPS", parse_positive_int, str(DEFAULT_KUBE_CLIENT_BURST),
           "COUNT"),
    Option("--watch-read-timeout", "NODEWRIGHT_WATCH_READ_TIMEOUT", "abandon and reopen a "
           "watch that sends nothing (no event, no bookmark) for this long; the API server "
           "sends a bookmark about every minute", _positive_duration,
           f"{DEFAULT_WATCH_READ_TIMEOUT:g}s", "DURATION"),
    Option("--min-values-policy", "MIN_VALUES_POLICY", "Strict: a NodeClaim launches only "
           "when its instance types meet every minValues; BestEffort: when they cannot, "
           "minValues is relaxed to what they offer (the NodeClaim is annotated "
           "karpenter.sh/nodeclaim-min-values-relaxed)", parse_min_values_policy, "Strict",
           "Strict|BestEffort"),
    Option("--solve-deadline", "SOLVE_DEADLINE", "wall time a provisioning solve may "
           "spend improving its plan beyond first fit; past it the best plan found so far "
           "is taken, still placing every pod that fits (0: no deadline, plans then depend "
           "only on their input)", parse_solve_deadline, "0", "DURATION"),
    Option("--preference-policy", "PREFERENCE_POLICY", "Respect: preferred node and pod "
           "affinities and ScheduleAnyway topology spreads are honoured while they can be "
           "(relaxed one by one when not); Ignore: they are dropped before scheduling",
           parse_preference_policy, "Respect", "Respect|Ignore"),
    Option("--ignore-dra-requests", "IGNORE_DRA_REQUESTS", "true: pods with Dynamic Resource "
           "Allocation claims (spec.resourceClaims) get no capacity (a FailedScheduling event "
           "says why) and DaemonSets with claims count in no node's overhead; false (DRA "
           "scheduling) is not supported", parse_ignore_dra_requests, "true", "BOOL",
           switch=True),
    Option("--vm-memory-overhead-percent", "VM_MEMORY_OVERHEAD_PERCENT", "with --cloud "
           "aws: the fraction of an instance type's memory the hypervisor keeps, taken off "
           "its capacity", parse_overhead_fraction, "0.075", "FRACTION"),
    Option("--reserved-enis", "RESERVED_ENIS", "with --cloud aws: network interfaces kept "
           "from pods (the VPC CNI's custom networking), left out of max-pods and "
           "kube-reserved", parse_non_negative_int, "0", "COUNT"),
    Option("--isolated-vpc", "ISOLATED_VPC", "with --cloud aws: the VPC reaches only services "
           "with a VPC endpoint; on-demand prices are the built-in ones, the Pricing API is "
           "never called", parse_bool, "false", "BOOL", switch=True),
    Option("--disable-dry-run", "DISABLE_DRY_RUN", "with --cloud aws: skip the dry-run "
           "authorization checks (CreateLaunchTemplate, CreateFleet and RunInstances) behind "
           "each EC2NodeClass's ValidationSucceeded condition", parse_bool, "false", "BOOL",
           switch=True),
    Option("--enable-zonal-shift", "ENABLE_ZONAL_SHIFT", "with --cloud aws: watch ARC "
           "zonal shifts on the EKS cluster (arc-zonal-shift:GetManagedResource every 30s): "
           "no launch into a zone traffic is shifted away from, no EC2 call about its "
           "instances; the cluster must be enabled for zonal shift", parse_bool, "false",
           "BOOL", switch=True),
    Option("--ami-refresh-interval", "AMI_REFRESH_INTERVAL", "with --cloud aws: how long "
           "the images amiSelectorTerms resolve to are kept before EC2 is asked again (at "
           "least 1m; alias SSM parameters are kept 24h regardless)", parse_refresh_interval,
           "1m", "DURATION"),
    Option("--subnet-refresh-interval", "SUBNET_REFRESH_INTERVAL", "with --cloud aws: how "
           "long the subnets subnetSelectorTerms resolve to are kept before EC2 is asked "
           "again (at least 1m)", parse_refresh_interval, "1m", "DURATION"),
    Option("--sim-timing", "NODEWRIGHT_SIM_TIMING", "with --cloud sim: how long simulated "
           "instances take, as key=duration pairs (" + ", ".join(
               f"{key}" for key in SIM_TIMING_KEYS) + "; defaults 20s launch, 30s "
           "registration, 30s termination)", parse_sim_timing, metavar="KEY=DURATION,..."),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per option; the help names the variable and the default."""
    for option in OPTIONS:
        shown = option.default or option.shown_default
        default = f" (default {shown})" if shown else ""
        switch: dict[str, Any] = {"nargs": "?", "const": "true"} if option.switch else {}
        parser.add_argument(
            option.flag,
            dest=option.dest,
            default=None,
            metavar=option.metavar,
            help=f"{option.help}{default}. Environment: {option.env}",
            **switch,
        )


def load(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> OperatorConfig:
    """Flags over environment over defaults. Raises ConfigError naming the source."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, tuple[str, str]] = {}
    for option in OPTIONS:
        flag_value = getattr(args, option.dest, None)
        if flag_value is not None:
            source, raw = option.flag, str(flag_value)
        elif env.get(option.env, "") != "":
            source, raw = option.env, env[option.env]
        elif option.default is not None:
            source, raw = option.env, option.default
        else:
            values[option.dest] = None
            continue
        try:
            values[option.dest] = option.parse(raw)
        except ValueError as error:
            raise ConfigError(source, raw, str(error)) from None
        sources[option.dest] = (source, raw)
    if not values["cluster_name"]:
        raise ConfigError("CLUSTER_NAME", "", "required (or --cluster-name)")
    # A batch idle duration longer than the max is Karpenter's too: the max ends each batch.
    if values["metrics_port"] == values["health_probe_port"] != 0:
        raise ConfigError(*sources["health_probe_port"],
                          "must differ from the metrics port (both would listen on it)")
    leader_elect = _leader_elect(values, sources)
    return OperatorConfig(
        cluster_name=values["cluster_name"],
        cloud=values["cloud"],
        kubeconfig=values["kubeconfig"],
        cluster_endpoint=values["cluster_endpoint"],
        cluster_ca_bundle=values["cluster_ca_bundle"],
        eks_control_plane=values["eks_control_plane"],
        interruption_queue=values["interruption_queue"],
        region=values["aws_region"] or env.get("AWS_DEFAULT_REGION") or None,
        batch_idle_duration=values["batch_idle_duration"],
        batch_max_duration=values["batch_max_duration"],
        feature_gates=values["feature_gates"],
        log_level=values["log_level"],
        leader_elect=leader_elect,
        metrics_port=values["metrics_port"],
        health_probe_port=values["health_probe_port"],
        leader_election_name=values["leader_election_name"],
        leader_election_namespace=(
            values["leader_election_namespace"] or env.get("POD_NAMESPACE")
            or _service_account_namespace() or "nodewright"
        ),
        identity=_identity(env),
        sim_timing=values["sim_timing"],
        kube_client_qps=values["kube_client_qps"],
        kube_client_burst=values["kube_client_burst"],
        watch_read_timeout=values["watch_read_timeout"],
        min_values_policy=values["min_values_policy"],
        solve_deadline=values["solve_deadline"],
        vm_memory_overhead_percent=values["vm_memory_overhead_percent"],
        reserved_enis=values["reserved_enis"],
        isolated_vpc=values["isolated_vpc"],
        disable_dry_run=values["disable_dry_run"],
        enable_zonal_shift=values["enable_zonal_shift"],
        ami_refresh_interval=values["ami_refresh_interval"],
        subnet_refresh_interval=values["subnet_refresh_interval"],
        preference_policy=values["preference_policy"],
        ignore_dra_requests=values["ignore_dra_requests"],
        cluster_state_observability=not values["disable_cluster_state_observability"],
        enable_profiling=values["enable_profiling"],
        log_output_paths=values["log_output_paths"],
        log_error_output_paths=values["log_error_output_paths"],
        memory_limit=values["memory_limit"],
        cpu_requests=values["cpu_requests"],
        karpenter_service=values["karpenter_service"],
        disable_controller_warmup=values["disable_controller_warmup"],
    )


def _leader_elect(values: Mapping[str, Any], sources: Mapping[str, tuple[str, str]]) -> bool:
    """Karpenter's DISABLE_LEADER_ELECTION, with LEADER_ELECT as its (inverted) alias: on
    unless either turns it off; both set and disagreeing is an error naming both."""
    disable, elect = values["disable_leader_election"], values["leader_elect"]
    if disable is not None and elect is not None and disable == elect:
        source, raw = sources["disable_leader_election"]
        other, other_raw = sources["leader_elect"]
        raise ConfigError(source, raw, f"contradicts {other}={other_raw!r}; set one of them")
    if disable is not None:
        return not bool(disable)
    return True if elect is None else bool(elect)


def _service_account_namespace() -> str | None:
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or None
    except OSError:
        return None


def _identity(env: Mapping[str, str]) -> str:
    """Who holds the Lease: the pod name (or host) plus a random suffix, as client-go does,
    so a restarted container never mistakes its predecessor's Lease for its own."""
    host = env.get("POD_NAME") or socket.gethostname()
    return f"{host}_{uuid.uuid4()}"
