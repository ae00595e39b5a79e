"""The resource verbs of the Kubernetes-shaped API, one module per kind of verb.

:class:`volcanoweb.kubeapi.views.ResourceView` is made of them: :mod:`.read` (get, list, watch),
:mod:`.write` (create, update), :mod:`.patch` (the four patch types, server-side apply) and :mod:`.delete`
(delete, deletecollection), each on :class:`.base.ResourceBase`, which finds the kind and the object and
holds what the writes share (dry runs, the URL's identity); :mod:`.fields` is ``fieldValidation``.
"""
