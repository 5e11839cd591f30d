"""The user data as Karpenter v1.14.1's Go sources write it, where its suites pin no bytes:
pkg/providers/amifamily/bootstrap (eksbootstrap.go, nodeadm.go, bottlerocket.go, mime)
and the Go libraries they write through (mime/multipart, net/textproto, sigs.k8s.io/yaml,
go-toml v2). These are Nodewright's own stories, no Karpenter It: each names the Go code it
follows. The Its themselves are ported in test_launch_template*_karpenter.py and
test_userdata_mime_karpenter.py."""

from __future__ import annotations

import base64
import tomllib
from typing import Any

import pytest
import yaml

from nodewright.api.core import Taint
from nodewright.api.kubelet import KubeletConfiguration
from nodewright.cloud.aws.userdata import (
    ClusterInfo,
    NodeBootstrap,
    UserDataError,
    al2,
    goyaml,
    mime,
    render_user_data,
)

CA = base64.b64encode(b"ca-bundle\n").decode()  # Karpenter's suite's Y2EtYnVuZGxlCg==
CLUSTER = ClusterInfo(name="test-cluster", endpoint="https://test-cluster", ca_bundle=CA,
                      service_cidr="10.100.0.0/16", dns_ip="10.0.100.10")
LABELS = {"karpenter.sh/nodepool": "default"}
HEAD = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'


def node(user_data: str | None = None, cluster: ClusterInfo = CLUSTER,
         **kubelet: Any) -> NodeBootstrap:
    return NodeBootstrap.build(
        cluster, labels=LABELS, kubelet=KubeletConfiguration.model_validate(
            {"maxPods": 110, **kubelet}), custom_user_data=user_data)


def al2_parts(user_data: str) -> list[mime.Part]:
    """The parts of the AL2 user data Nodewright writes, the last one ours."""
    return mime.read_archive(render_user_data("AL2", node(user_data)))


# --- AL2: bootstrap.sh --------------------------------------------------------------------


def test_al2_puts_local_disks_after_the_kubelet_arguments() -> None:
    """eksbootstrap.go: --ip-family, --dns-cluster-ip, --use-max-pods, --kubelet-extra-args,
    then --local-disks, each after ` \\` and a line break; the values single-quoted."""
    raid = NodeBootstrap.build(CLUSTER, labels=LABELS, instance_store_policy="RAID0",
                               kubelet=KubeletConfiguration(max_pods=110))

    script = al2.script(raid)

    assert script.endswith(
        "/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster' "
        f"--b64-cluster-ca '{CA}' \\\n--dns-cluster-ip '10.0.100.10' \\\n"
        "--use-max-pods false \\\n--kubelet-extra-args '--node-labels=\"karpenter.sh/nodepool="
        "default\" --register-with-taints=\"karpenter.sh/unregistered:NoExecute\" "
        "--max-pods=110' \\\n--local-disks raid0")


@pytest.mark.parametrize(("dns", "ipv6"), [
    pytest.param("10.0.100.10", False, id="IPv4"),
    pytest.param("fd4b:121b:812b::a", True, id="IPv6"),
    pytest.param("::ffff:10.0.100.10", False, id="IPv4-mapped IPv6: Go's To4 reads IPv4"),
    pytest.param("kube-dns", True, id="no address: Go's ParseIP gives nil, To4 nil"),
])
def test_al2_ip_family_follows_gos_reading_of_the_dns_address(dns: str, ipv6: bool) -> None:
    """eksbootstrap.go isIPv6: net.ParseIP(clusterDNS[0]).To4() == nil."""
    script = al2.script(node(clusterDNS=[dns]))
    assert ("--ip-family ipv6 \\\n" in script) is ipv6
    assert f"--dns-cluster-ip '{dns}'" in script


def test_al2_without_a_ca_bundle_leaves_its_argument_out() -> None:
    """eksbootstrap.go: no CABundle, no --b64-cluster-ca (the space before it stays)."""
    no_ca = ClusterInfo(name="test-cluster", endpoint="https://test-cluster", ca_bundle="",
                        dns_ip="10.0.100.10")
    assert "--apiserver-endpoint 'https://test-cluster'  \\\n--dns-cluster-ip" in al2.script(
        node(cluster=no_ca))


def test_al2_quotes_each_kubelet_list_as_gos_percent_q() -> None:
    """bootstrap.go kubeletExtraArgs: the labels, taints and every map flag `%q`-quoted,
    taints as Taint.ToString (no `=` without a value)."""
    taints = [Taint(key="dedicated", value="payments", effect="NoSchedule"),
              Taint(key="example.com/agent-not-ready", effect="NoExecute")]
    bootstrap = NodeBootstrap.build(CLUSTER, labels=LABELS, taints=taints,
                                    kubelet=KubeletConfiguration.model_validate({
                                        "maxPods": 110, "podsPerCore": 2,
                                        "systemReserved": {"memory": "1Gi", "cpu": "1"},
                                        "evictionHard": {"memory.available": "5%"},
                                        "cpuCFSQuota": False}))

    assert ("--kubelet-extra-args '--node-labels=\"karpenter.sh/nodepool=default\" "
            '--register-with-taints="dedicated=payments:NoSchedule,'
            'example.com/agent-not-ready:NoExecute,karpenter.sh/unregistered:NoExecute" '
            '--max-pods=110 --pods-per-core=2 --system-reserved="cpu=1,memory=1Gi" '
            "--eviction-hard=\"memory.available<5%\" --cpu-cfs-quota=false'"
            in al2.script(bootstrap))


# --- MIME: what is MIME, and how a user's archive is read ---------------------------------


@pytest.mark.parametrize("user_data", [
    pytest.param("mime-version: 1.0\ncontent-type: multipart/mixed; boundary=B\n\n--B\n\n"
                 "echo hi\n--B--\n", id="headers in lower case"),
    pytest.param('#!/bin/bash\necho "Content-Type: multipart/mixed; boundary=B"\n',
                 id="a script printing a MIME header"),
    pytest.param("#!/bin/bash\n# MIME-Version: 1.0\necho hi\n", id="a commented header"),
])
def test_only_text_starting_with_a_mime_header_is_mime(user_data: str) -> None:
    """eksbootstrap.go mimeify / nodeadm.go parseUserData: MIME is what starts, after white
    space, with `MIME-Version:` or `Content-Type:`, exactly so; anything else is the user's
    script, sent unchanged as one part."""
    assert not mime.is_mime(user_data)
    user, _ours = al2_parts(user_data)
    assert (user.content_type, user.body) == (mime.SHELL_SCRIPT, user_data)


@pytest.mark.parametrize(("user_data", "problem"), [
    pytest.param("\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\n"
                 "echo hi\n--B--\n", "no media type",
                 id="a blank line first: the message has no headers"),
    pytest.param("  MIME-Version: 1.0\n", "malformed MIME header initial line",
                 id="a space first"),
    pytest.param("Content-Type: text/x-shellscript\n\necho hi\n", "must be multipart",
                 id="not multipart"),
    pytest.param("MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n--\n\necho hi\n",
                 "boundary is empty", id="no boundary"),
    pytest.param("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n\n"
                 "echo hi\n", "unexpected EOF", id="a part never closed"),
    pytest.param("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\n"
                 "Content-Type text/x-shellscript\n\necho hi\n--B--\n", "missing colon",
                 id="a part's header without its colon"),
])
def test_mime_user_data_go_cannot_read_is_refused(user_data: str, problem: str) -> None:
    """mail.ReadMessage, mime.ParseMediaType and multipart.Reader refuse these; Karpenter
    then launches nothing for the node class, nor do we."""
    for family in ("AL2", "AL2023"):
        with pytest.raises(UserDataError, match=problem):
            render_user_data(family, node(user_data))


def test_a_mime_archive_ends_where_gos_reader_stops() -> None:
    """multipart.Reader: a preamble is skipped, a body is what lies before the line break
    of the next boundary, and reading ends at the closing boundary, at an opening boundary
    with nothing after it (Karpenter's own AL2023 test input), or at the input's end."""
    archive = ("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n"
               "a preamble\n--B\nContent-Type: text/x-shellscript\n\necho one\n\n"
               "--B\nContent-Type: text/x-shellscript\n\necho two\n--B\n")

    assert [(p.content_type, p.body) for p in mime.read_archive(archive)] == [
        ("text/x-shellscript", "echo one\n"), ("text/x-shellscript", "echo two")]


def test_a_crlf_archive_is_read_and_written_without_carriage_returns() -> None:
    """multipart.Reader reads CRLF lines; Karpenter removes every carriage return from what
    it writes, the user's bodies included."""
    archive = ('MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="B"\r\n\r\n'
               "--B\r\nContent-Type: text/x-shellscript\r\n\r\n#!/bin/bash\r\necho hi\r\n"
               "--B--\r\n")

    text = render_user_data("AL2", node(archive))

    assert "\r" not in text
    assert text.startswith(HEAD + "--//\nContent-Type: text/x-shellscript\n\n"
                           "#!/bin/bash\necho hi\n--//\n")


USER_ARCHIVE = (
    'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n'
    "--B\ncontent-type: text/cloud-config\nX-Origin: team-a\n"
    "Content-Disposition: attachment; filename=\"config.yaml\"\n"
    "Content-Transfer-Encoding: base64\n\nI2Nsb3VkLWNvbmZpZwo=\n"
    "--B\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: quoted-printable\n\n"
    "echo caf=C3=A9 =\nsoft break\n"
    "--B--\n")


def test_al2_copies_every_header_of_the_users_parts_and_their_bodies() -> None:
    """eksbootstrap.go copyCustomUserDataParts: each part is written again with all its
    headers (canonical names, sorted, as multipart.Writer writes them) and its body as
    read: a base64 body stays encoded; a quoted-printable one is decoded, its
    Content-Transfer-Encoding dropped, as Go's multipart reader does."""
    text = render_user_data("AL2", node(USER_ARCHIVE))

    assert text.startswith(
        HEAD
        + '--//\nContent-Disposition: attachment; filename="config.yaml"\n'
        "Content-Transfer-Encoding: base64\nContent-Type: text/cloud-config\n"
        "X-Origin: team-a\n\nI2Nsb3VkLWNvbmZpZwo=\n"
        "--//\nContent-Type: text/x-shellscript\n\necho café soft break\n"
        '--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash -xe\n')


def test_al2023_keeps_only_the_content_type_of_the_users_parts() -> None:
    """nodeadm.go parseUserData through mime.NewArchive: an entry is a Content-Type and a
    body; the other headers are not written again."""
    user_cloud_config, user_script, _ours = mime.read_archive(
        render_user_data("AL2023", node(USER_ARCHIVE)))

    assert user_cloud_config.headers == (("Content-Type", "text/cloud-config"),)
    assert user_cloud_config.body == "I2Nsb3VkLWNvbmZpZwo="
    assert (user_script.content_type, user_script.body) == (
        "text/x-shellscript", "echo café soft break")


# --- AL2023: which part the user's text is, and how our NodeConfig is written -------------


@pytest.mark.parametrize(("user_data", "content_type"), [
    pytest.param("echo hi\n", mime.SHELL_SCRIPT, id="a script without #!"),
    pytest.param("#!/bin/bash\necho hi\n", mime.SHELL_SCRIPT, id="a script"),
    pytest.param("- a\n- list\n", mime.SHELL_SCRIPT, id="a YAML list"),
    pytest.param("kind: [NodeConfig\n", mime.SHELL_SCRIPT, id="broken YAML"),
    pytest.param("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n", mime.NODE_CONFIG,
                 id="a YAML mapping"),
    pytest.param("spec: {}\n---\n- then a list\n", mime.NODE_CONFIG,
                 id="only the first YAML document counts"),
    pytest.param("#!/bin/bash\nFOO: bar\n", mime.NODE_CONFIG,
                 id="a script that reads as a YAML mapping"),
    pytest.param("\n", mime.NODE_CONFIG, id="white space: YAML null, read into a map"),
])
def test_al2023_sorts_text_that_is_not_mime_as_karpenter_does(user_data: str,
                                                               content_type: str) -> None:
    """nodeadm.go parseUserData: text sigs.k8s.io/yaml can read into a map[string]any is a
    NodeConfig part, anything else a shell script; nothing is refused."""
    user, ours = mime.read_archive(render_user_data("AL2023", node(user_data)))
    assert (user.content_type, user.body) == (content_type, user_data)
    assert ours.content_type == mime.NODE_CONFIG


def test_al2023_node_config_quotes_what_go_yaml_would_read_as_no_string() -> None:
    """sigs.k8s.io/yaml (go-yaml v2): a string that reads back as a number, boolean or null
    is double-quoted; other strings plain; keys in go-yaml's order."""
    taints = [Taint(key="gpu", value="true", effect="NoSchedule"),
              Taint(key="zone", value="1", effect="NoSchedule")]
    bootstrap = NodeBootstrap.build(CLUSTER, labels=LABELS, taints=taints,
                                    kubelet=KubeletConfiguration.model_validate({
                                        "maxPods": 110, "systemReserved": {"cpu": "2",
                                                                           "memory": "1Gi"}}))

    text = mime.read_archive(render_user_data("AL2023", bootstrap))[-1].body

    assert ('      systemReserved:\n        cpu: "2"\n        memory: 1Gi\n' in text)
    assert ("      - effect: NoSchedule\n        key: gpu\n        value: \"true\"\n"
            "      - effect: NoSchedule\n        key: zone\n        value: \"1\"\n" in text)
    assert yaml.safe_load(text)["spec"]["kubelet"]["config"]["systemReserved"]["cpu"] == "2"


def test_go_yaml_sorts_keys_naturally() -> None:
    """go-yaml v2 keyList.Less: non-letters before letters, runs of digits as numbers."""
    assert goyaml.sorted_keys(["aB", "a10", "a9", "a_b", "hugepages-2Mi", "hugepages-1Gi"]) == [
        "a_b", "a9", "a10", "aB", "hugepages-1Gi", "hugepages-2Mi"]


def test_al2023_reencodes_the_ca_bundle_and_refuses_one_that_is_not_base64() -> None:
    """nodeadm.go: the CA bundle is decoded into NodeConfig's []byte field (an error if it
    is not base64) and written back as base64."""
    assert f"certificateAuthority: {CA}\n" in render_user_data("AL2023", node())
    broken = ClusterInfo(name="test-cluster", endpoint="https://test-cluster",
                         ca_bundle="not base64!", service_cidr="10.100.0.0/16")
    with pytest.raises(UserDataError, match="CA bundle"):
        render_user_data("AL2023", node(cluster=broken))


# --- Bottlerocket: Karpenter's settings structs through go-toml ---------------------------


def test_bottlerocket_writes_image_gc_thresholds_as_strings() -> None:
    """bottlerocket.go: Karpenter's struct holds the thresholds as *string."""
    text = render_user_data("Bottlerocket", node(imageGCHighThresholdPercent=85))
    assert "\nimage-gc-high-threshold-percent = '85'\n" in text


@pytest.mark.parametrize(("user_data", "setting"), [
    pytest.param("[settings.kubernetes]\nmax-pods = 'ten'\n", "kubernetes.max-pods",
                 id="a string for int"),
    pytest.param("[settings.kubernetes]\nimage-gc-high-threshold-percent = 85\n",
                 "kubernetes.image-gc-high-threshold-percent", id="an integer for string"),
    pytest.param("[settings.kubernetes]\nlog-level = -1\n", "kubernetes.log-level",
                 id="a negative uint32"),
    pytest.param("[settings.kubernetes.node-labels]\nteam = 1\n", "kubernetes.node-labels.team",
                 id="an integer label"),
    pytest.param("[settings.bootstrap-commands.hello]\ncommands = ['echo']\n",
                 "bootstrap-commands.hello.commands", id="commands not a list of lists"),
])
def test_bottlerocket_refuses_a_setting_of_the_wrong_type(user_data: str,
                                                          setting: str) -> None:
    """bottlerocketsettings.go: go-toml reads the user's settings into Karpenter's typed
    structs and fails on a value of another type (Karpenter then bootstraps nothing)."""
    with pytest.raises(UserDataError, match=f"settings\\.{setting}: cannot decode"):
        render_user_data("Bottlerocket", node(user_data))


def test_bottlerocket_writes_the_users_settings_in_go_tomls_order() -> None:
    """bottlerocketsettings.go MarshalTOML: settings' tables sorted; Karpenter's kubernetes
    struct in its field order, its key/values first; a credential provider without image
    patterns gets Go's empty list. A key Karpenter's model does not know is kept after
    the known ones (docs/karpenter-differences.md: Karpenter drops it)."""
    user_data = ("[settings.motd]\n"
                 "[settings.kubernetes]\nzzz-new-setting = 1\nseccomp-default = true\n"
                 "[settings.kubernetes.credential-providers.ecr-credential-provider]\n"
                 "enabled = true\n"
                 "[settings.host-containers.admin]\nenabled = false\n")

    text = render_user_data("Bottlerocket", node(user_data))

    assert text == (
        "[settings]\n"
        "[settings.host-containers]\n[settings.host-containers.admin]\nenabled = false\n\n"
        "[settings.kubernetes]\napi-server = 'https://test-cluster'\n"
        f"cluster-certificate = '{CA}'\ncluster-name = 'test-cluster'\n"
        "cluster-dns-ip = '10.0.100.10'\nmax-pods = 110\nseccomp-default = true\n"
        "zzz-new-setting = 1\n\n"
        "[settings.kubernetes.credential-providers]\n"
        "[settings.kubernetes.credential-providers.ecr-credential-provider]\n"
        "enabled = true\nimage-patterns = []\n\n"
        "[settings.kubernetes.node-labels]\n'karpenter.sh/nodepool' = 'default'\n\n"
        "[settings.kubernetes.node-taints]\n'karpenter.sh/unregistered' = [':NoExecute']\n\n"
        "[settings.motd]\n")
    assert tomllib.loads(text)["settings"]["kubernetes"]["zzz-new-setting"] == 1
