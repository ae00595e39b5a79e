"""The official Python client's typed calls for round two: auth reviews, a Command's name and deletion,
garbage collection with a propagation policy, and a Queue's delete error."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.volcanoweb import builders
from tests.volcanoweb.reactions import react
from volcanoweb.jobs.models import Command, Job

pytestmark = pytest.mark.django_db(transaction=True)


def test_auth_reviews(official, cast) -> None:
    api = official(cast.alice)
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(
                namespace="team-a", verb="create", group="batch.volcano.sh", resource="jobs"
            )
        )
    )
    assert client.AuthorizationV1Api(api).create_self_subject_access_review(review).status.allowed is True
    review.spec.resource_attributes.namespace = "team-b"
    assert client.AuthorizationV1Api(api).create_self_subject_access_review(review).status.allowed is False
    me = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
    assert me.status.user_info.username == "alice"


def test_commands_and_garbage_collection(official, cast) -> None:
    builders.make_job("team-a", "train")
    custom = client.CustomObjectsApi(official(cast.alice))
    command = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "restart-train"},
        "action": "RestartJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train"},
    }
    created = custom.create_namespaced_custom_object("bus.volcano.sh", "v1alpha1", "team-a", "commands", command)
    assert created["metadata"]["name"] == "restart-train"
    # The job controller reads it from the log and acts on it (tasks run eagerly here): then it is gone.
    found = react()
    assert Job.objects.get(name="train").pk in found.urgent | found.jobs
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object("bus.volcano.sh", "v1alpha1", "team-a", "commands", "restart-train")
    assert gone.value.status == 404
    listed = custom.list_namespaced_custom_object("bus.volcano.sh", "v1alpha1", "team-a", "commands")
    assert listed["items"] == []
    assert Command.objects.get(name="restart-train").consumed_at is not None  # the job's command history

    parent = Job.objects.get(name="train")
    child = builders.job_manifest("child")
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": str(parent.uid)}
    ]
    custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "team-a", "jobs", child)
    custom.delete_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "team-a", "jobs", "train", propagation_policy="Foreground"
    )
    assert not Job.objects.filter(name__in=["train", "child"]).exists()


def test_a_queue_with_children(official, cast) -> None:
    builders.make_queue("parent-q")
    builders.make_queue("child-q", parent="parent-q")
    custom = client.CustomObjectsApi(official(cast.root))
    with pytest.raises(ApiException) as refused:
        custom.delete_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", "parent-q")
    assert refused.value.status == 400
    assert "can not be deleted because it has 1 child queues: child-q" in refused.value.body
