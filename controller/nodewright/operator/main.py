"""`nodewright controller`: the process a Deployment runs.

`ControllerProcess(config)` connects to the API server, builds the cloud (`aws`: EC2
through boto3, with the EC2NodeClass status controller, the catalog refresh, the
interruption queue and the instance status health checks; `sim`: the simulated EC2 whose
Nodes this process registers and keeps alive), starts the operator behind leader
election and serves /metrics, /healthz and /readyz. `run(config)` adds the signal
handling: SIGTERM or SIGINT stop it cleanly (no new work, the reconcile in flight
finishes, the Lease is released) well within the pod's terminationGracePeriodSeconds;
losing the Lease ends it with exit code 1.
"""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType

import boto3

from nodewright import __version__, metrics
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.interruption_queue import InterruptionQueue
from nodewright.cloud.aws.zonal_shift import ZonalShifts
from nodewright.cloud.aws.zonal_shift import enable as enable_zonal_shift
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cloud.sim import SimSettings, SimulatedEC2
from nodewright.cloud.sim.kubelet_actors import sim_kubelet
from nodewright.cluster.kube.access import WATCHED_KINDS, watched_kinds
from nodewright.cluster.kube.cluster import KubeCluster, connect, trusted_ca_bundle
from nodewright.cluster.kube.discovery import ServerCheckError
from nodewright.cluster.kube.transport import ClientLimits
from nodewright.controllers.options import GATE_OPTIONS, ControllerOptions, with_gates
from nodewright.operator import health, logs
from nodewright.operator.config import FEATURE_GATES, OperatorConfig
from nodewright.operator.driver import HealthLimits
from nodewright.operator.endpoints import MetricsEndpoint, ProbeEndpoint
from nodewright.operator.kube_dns import kube_dns_ip
from nodewright.operator.leader import LeaseTiming
from nodewright.operator.memory_watch import MemoryWatch
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.operator.shutdown import Shutdown
from nodewright.runtime.clock import SystemClock
from nodewright.runtime.reconciler import Reconciler
from nodewright.scheduling.allocatable import ProviderSettings

log = logging.getLogger("nodewright.controller")

SIM_DEFAULT_REGION = "us-east-1"  # as `simulate`, `plan` and `catalog` default
# Gates whose features Nodewright has; the others are accepted (a chart may set them) and
# reported as having no effect.
IMPLEMENTED_GATES = frozenset(GATE_OPTIONS)
# Leave the kubelet's grace period (install.settings.TERMINATION_GRACE_PERIOD_SECONDS, 30 s)
# some room: every phase of the stop together ends within 25 s (operator.shutdown).
STOP_TIMEOUT_SECONDS = 25.0
# The interruption controller's SQS long poll (on its own worker, outside the state lock):
# a message is acted on as soon as it arrives. Karpenter waits 20 s; 10 s keeps a clean
# stop, which lets the receive in flight finish, well within STOP_TIMEOUT_SECONDS.
INTERRUPTION_LONG_POLL_SECONDS = 10
# How often CPython makes a running thread hand the GIL over (its default is 5 ms). The
# solve and the disruption pass are pure Python on worker threads of their own; with
# 1 ms the short reconciles an interruption or a registration needs wait less for their
# turn (bench/controller_latency.py: 0.1-1.3 s instead of 0.4-2.9 s to act on a spot
# interruption during a solve and a pass on a loaded 2-core machine).
SWITCH_INTERVAL_SECONDS = 0.001


class StartupError(Exception):
    """The process cannot start (no kubeconfig, no region, a port in use); the text says
    what to fix."""


def build_cloud(config: OperatorConfig, cluster: KubeCluster, clock: SystemClock,
                sim_settings: SimSettings | None = None,
                ) -> tuple[CloudProvider, list[Reconciler]]:
    """The cloud, and what plays the kubelet for its instances when nothing real does
    (the simulated EC2's nodes on a real cluster). The controllers, those of the
    EC2NodeClass included, come from `controllers.registry` whatever the cloud."""
    if config.cloud == "sim":
        if config.interruption_queue:
            # A real queue carries EC2's events about real instances: none of them is one
            # of ours, and reading it would need AWS credentials the sim runs without.
            log.warning("INTERRUPTION_QUEUE=%r is not read with --cloud sim: simulated "
                        "instances get no EC2 events; the interruption controller reads "
                        "the simulated EC2's own queue instead", config.interruption_queue,
                        extra={"cloud": "sim"})
        # A seed of its own: instance ids and node names must not repeat those of the
        # process before it (a restarted or replaced leader), whose NodeClaims remain.
        sim = SimulatedEC2(clock, cluster=cluster, cluster_name=config.cluster_name,
                           region=config.region or SIM_DEFAULT_REGION,
                           seed=random.SystemRandom().randrange(2**63),
                           settings=sim_settings or config.sim_timing)
        return sim, sim_kubelet(cluster, sim, clock)
    clients = AwsClients.create(aws_region(config))
    queue = (InterruptionQueue(clients.sqs, _queue_url(clients, config.interruption_queue),
                               wait_seconds=INTERRUPTION_LONG_POLL_SECONDS)
             if config.interruption_queue else None)
    aws = InterruptibleAwsCloud(clients=clients, cluster_name=config.cluster_name,
                                interruption_queue=queue,
                                cluster_endpoint=config.cluster_endpoint,
                                cluster_ca_bundle=config.cluster_ca_bundle,
                                eks_control_plane=config.eks_control_plane,
                                server_version=getattr(cluster, "server_minor_version", None),
                                provider_settings=ProviderSettings(
                                    config.vm_memory_overhead_percent, config.reserved_enis),
                                isolated_vpc=config.isolated_vpc,
                                kube_dns_ip=kube_dns_ip(cluster),
                                dry_run=not config.disable_dry_run,
                                ami_refresh_seconds=config.ami_refresh_interval,
                                subnet_refresh_seconds=config.subnet_refresh_interval,
                                zonal_shifts=_zonal_shifts(config, clients),
                                reserved_capacity=config.feature_gates["ReservedCapacity"])
    return aws, []


def aws_region(config: OperatorConfig) -> str:
    """Karpenter's region: the AWS SDK's (AWS_REGION, AWS_DEFAULT_REGION, the shared config
    file), else the instance's, from IMDS (the AWS provider's pkg/operator/operator.go:
    "retrieving region from IMDS"; its chart sets no AWS_REGION)."""
    region = config.region or boto3.session.Session().region_name
    if region:
        return str(region)
    log.debug("retrieving region from IMDS")
    discovered = _imds_region()
    if not discovered:
        raise StartupError("AWS_REGION is not set, the AWS SDK found no default region and "
                           "the instance metadata service (IMDS) answered none")
    log.debug("discovered region", extra={"region": discovered})
    return discovered


def _imds_region() -> str | None:
    """The region of the instance this runs on, from IMDS (None when it does not answer:
    not on EC2, or the pod's hop limit too low)."""
    from botocore.session import get_session
    from botocore.utils import IMDSRegionProvider

    try:
        region = IMDSRegionProvider(get_session()).provide()
    except Exception:  # botocore's fetch errors, a refused or timed-out connection
        return None
    return str(region) if region else None


def _zonal_shifts(config: OperatorConfig, clients: AwsClients) -> ZonalShifts | None:
    if not config.enable_zonal_shift:
        return None
    try:
        return enable_zonal_shift(clients, config.cluster_name)
    except CloudProviderError as error:
        raise StartupError(str(error)) from error


def _queue_url(clients: AwsClients, name: str) -> str:
    try:
        return InterruptionQueue.by_name(clients.sqs, name).queue_url
    except CloudProviderError as error:
        raise StartupError(f"INTERRUPTION_QUEUE={name!r}: {error}") from error


def controller_options(config: OperatorConfig) -> ControllerOptions:
    for gate, enabled in sorted(config.feature_gates.items()):
        # Karpenter turns ReservedCapacity on by default: only a user's choice is reported.
        if enabled and gate not in IMPLEMENTED_GATES and not FEATURE_GATES[gate]:
            log.warning("feature gate %s is enabled but has no effect in nodewright", gate)
    return with_gates(ControllerOptions(
        batch_idle_seconds=config.batch_idle_duration,
        batch_max_seconds=config.batch_max_duration,
        reporting_instance=config.identity,
        relax_min_values=config.min_values_policy == "BestEffort",
        solve_deadline=config.solve_deadline,
        ignore_preferences=config.preference_policy == "Ignore",
        cluster_state_observability=config.cluster_state_observability,
        # Karpenter's caBundle: CLUSTER_CA_BUNDLE, else the CA the API client trusts.
        cluster_ca_bundle=config.cluster_ca_bundle or trusted_ca_bundle(config.kubeconfig),
    ), config.feature_gates)


class ControllerProcess:
    def __init__(self, config: OperatorConfig, *, cluster: KubeCluster | None = None,
                 timing: LeaseTiming | None = None,
                 sim_settings: SimSettings | None = None,
                 health: HealthLimits | None = None) -> None:
        """`cluster`, `timing`, `sim_settings` and `health` replace what the configuration
        would build (tests: a stubbed API server, short leases, fast simulated instances,
        short liveness budgets)."""
        self.config = config
        self._timing = timing or LeaseTiming()
        self._health = health or HealthLimits()
        self._sim_settings = sim_settings
        self._given_cluster = cluster
        self.cluster: KubeCluster | None = None
        # Leader election's own client (its own QPS bucket), when this process connects.
        self.lease_cluster: KubeCluster | None = None
        self.operator: Operator | None = None
        self.metrics: MetricsEndpoint | None = None
        self.probes: ProbeEndpoint | None = None
        self.memory_watch: MemoryWatch | None = None

    def start(self) -> None:
        config = self.config
        metrics.BUILD_INFO.labels(version=__version__).set(1)
        cluster = self._given_cluster or self._connect(watched_kinds(
            capacity_buffer=config.feature_gates["CapacityBuffer"]))
        self.cluster = cluster
        try:
            server_version = cluster.check_server(configured_by=self._configured_by())
        except ServerCheckError as error:
            cluster.close()
            raise StartupError(str(error)) from error
        log.info("connected to the API server", extra={"version": server_version})
        cluster.start()
        clock = SystemClock()
        cloud, extra = build_cloud(config, cluster, clock, self._sim_settings)
        options = controller_options(config)
        settings = OperatorSettings(
            identity=config.identity, leader_elect=config.leader_elect,
            lease_name=config.leader_election_name,
            lease_namespace=config.leader_election_namespace,
            timing=self._timing, controllers=options, health=self._health,
            cpu_requests=config.cpu_requests,
        )
        if self._given_cluster is None and config.leader_elect:
            self.lease_cluster = self._connect(cached_kinds=())
        self.operator = Operator(cluster, cloud, settings, clock=clock, extra=extra,
                                 lease_cluster=self.lease_cluster)
        try:
            self.metrics = MetricsEndpoint(config.metrics_port,
                                           profiling=config.enable_profiling)
            self.probes = ProbeEndpoint(config.health_probe_port, healthy=self._healthy,
                                        ready=self._ready)
        except OSError as error:
            self.shutdown()
            raise StartupError(f"cannot serve the metrics or probe port: {error}") from error
        if config.memory_limit > 0:
            self.memory_watch = MemoryWatch(config.memory_limit)
            self.memory_watch.start()
        self.operator.start()
        log.info("started", extra={"cloud": config.cloud, "cluster": config.cluster_name,
                                   "identity": config.identity, "version": __version__})

    def _connect(self, cached_kinds: Iterable[str] = WATCHED_KINDS) -> KubeCluster:
        """A client of the API server, with KUBE_CLIENT_QPS/BURST of its own."""
        try:
            client = connect(self.config.kubeconfig)
        except Exception as error:  # lightkube's ConfigError, a missing or unreadable file
            where = self.config.kubeconfig or "the in-cluster service account or ~/.kube/config"
            raise StartupError(f"cannot load the Kubernetes configuration from {where}: "
                               f"{error}") from error
        limits = ClientLimits(qps=float(self.config.kube_client_qps),
                              burst=self.config.kube_client_burst)
        return KubeCluster(client, limits=limits, cached_kinds=cached_kinds,
                           watch_read_timeout=self.config.watch_read_timeout)

    def _configured_by(self) -> str:
        if self.config.kubeconfig:
            return f"the kubeconfig {self.config.kubeconfig} (--kubeconfig or KUBECONFIG)"
        return ("the in-cluster service account, else ~/.kube/config (neither --kubeconfig "
                "nor KUBECONFIG is set)")

    def _ready(self) -> str | None:
        if self.operator is None:
            return "starting"
        problem = self.operator.ready()
        if problem is not None and self.cluster is not None and not self.cluster.synced():
            problems = self.cluster.problems()
            if problems:
                problem += ": " + "; ".join(problems)
        return problem

    def _healthy(self) -> str | None:
        if self.operator is None:
            return "starting"
        problem = self.operator.healthy()
        if problem is None and self.cluster is not None:
            if not self.cluster.alive():
                return "a watch of the API server stopped"
            down = self.cluster.disconnected(self._health.disconnected)
            if down:
                return f"no watch of the API server open for: {', '.join(down)}"
            return health.stuck_queue({"watch event buffer": self.cluster.undelivered_for},
                                      self._health.stall_budget)
        return problem

    def lost_leadership(self) -> bool:
        return self.operator is not None and self.operator.lost_leadership.is_set()

    def shutdown(self, timeout: float = STOP_TIMEOUT_SECONDS) -> bool:
        """Stop taking work, finish what is in flight, release the Lease, close."""
        budget = Shutdown(timeout)  # shared by every phase: see operator.shutdown
        if self.memory_watch is not None:
            self.memory_watch.stop()
        operator = self.operator
        if operator is not None:
            budget.run("the operator", operator.stop)
        closing: list[tuple[str, Callable[[], None]]] = [
            (name, part.close) for name, part in (
                ("the probe endpoint", self.probes), ("the metrics endpoint", self.metrics),
                ("the API client", self.cluster), ("the Lease client", self.lease_cluster))
            if part is not None]
        for name, close in closing:
            budget.run(name, _ignoring_time(close))
        log.info("stopped", extra={"clean": budget.clean})
        return budget.clean


def _ignoring_time(action: Callable[[], None]) -> Callable[[float | None], None]:
    """A phase of the stop that takes no timeout of its own."""
    return lambda left: action()


def run(config: OperatorConfig) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or until the Lease is lost (exit 1)."""
    try:
        logs.configure(config.log_level, outputs=config.log_output_paths,
                       error_outputs=config.log_error_output_paths)
    except OSError as error:
        print(f"nodewright controller: LOG_OUTPUT_PATHS or LOG_ERROR_OUTPUT_PATHS: cannot "
              f"open {error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        log.info("received %s; stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    process = ControllerProcess(config)
    try:
        process.start()
    except StartupError as error:
        log.error("%s", error)
        return 1
    while not stop.wait(0.2):
        if process.lost_leadership():
            # As controller-runtime: exit at once, abandoning the work in flight (another
            # replica may lead by now); the kubelet starts the container again.
            log.error("lost the leader Lease; exiting to start again as a candidate")
            return 1
    return 0 if process.shutdown() else 1
