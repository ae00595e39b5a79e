"""The resource view of the Kubernetes-shaped API: every verb on
``/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]`` (and core ``/api/v1``).

The verbs are in :mod:`volcanoweb.kubeapi.verbs`, one module per kind of verb; discovery and ``/version``
are :mod:`volcanoweb.kubeapi.discovery`, OpenAPI :mod:`~volcanoweb.kubeapi.openapi_v2` and
:mod:`~volcanoweb.kubeapi.openapi_v3`, the paths shared with the REST API :mod:`volcanoweb.kubeapi.dispatch`.
"""

from __future__ import annotations

from volcanoweb.kubeapi.verbs.delete import DeleteVerbs
from volcanoweb.kubeapi.verbs.patch import PatchVerb
from volcanoweb.kubeapi.verbs.read import ReadVerbs
from volcanoweb.kubeapi.verbs.write import WriteVerbs


class ResourceView(ReadVerbs, WriteVerbs, PatchVerb, DeleteVerbs):
    """Every verb on ``/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/status]]`` (and core ``/api/v1``)."""
