"""The Kubernetes adapter of ClusterAPI, on lightkube (see docs/decisions.md).

`KubeCluster` serves get/list from informer caches (list + watch per kind, with
bookmarks, re-list on 410 Gone, reconnect with backoff) and writes through the API
server; `access` holds what it may ask of the server, the source of the RBAC rules.
"""
