"""The live WebSocket through the project's WebSocket stack: two tenants see only what each may read, for every
message kind; sockets close on logout, token revocation and membership loss; garbage frames are answered,
and repeated abuse closes the socket politely."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.layers import channel_layers
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.db import connections, transaction
from django.test import Client

from tests.volcanoweb import builders
from tests.volcanoweb.clusters.helpers import make_gang
from tests.volcanoweb.conftest import FAST_HASHERS, Cast, build_cast
from volcanoweb.clusters.models import Node
from volcanoweb.jobs.models import PriorityClass
from volcanoweb.live import broadcast, consumers, groups
from volcanoweb.live.routing import websocket_urlpatterns
from volcanoweb.queues import services as queue_services
from volcanoweb.queues.builtin import ensure_builtin_queues
from volcanoweb.scheduling import decisions
from volcanoweb.tenancy import services as tenancy
from volcanoweb.tenancy.access import SYSTEM
from volcanoweb.tenancy.models import Membership

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture(autouse=True)
def _in_memory_layer(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.PASSWORD_HASHERS = FAST_HASHERS
    channel_layers.backends.clear()
    monkeypatch.setattr(consumers, "FRAME_INTERVAL", 0.0)
    broadcast.discard_pending()
    yield
    channel_layers.backends.clear()


@pytest_asyncio.fixture(autouse=True)
async def _close_the_sync_threads_connection() -> AsyncIterator[None]:
    """The rows these tests write go through asgiref's one sync thread: its connection is closed after each
    test (it would otherwise hold the test database open at teardown)."""
    yield
    await sync_to_async(connections.close_all)()


@pytest_asyncio.fixture
async def world() -> Cast:
    await sync_to_async(ensure_builtin_queues)()  # root and default (a transactional test starts empty)
    cast: Cast = await sync_to_async(build_cast)()
    return cast


def _application() -> Any:
    """The WebSocket stack of ``volcanoweb.asgi`` (importing that module would re-pool the test database)."""
    return AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def open_socket(
    user: Any = None, *, token: str | None = None, session: str | None = None, path: str = "/ws/live/"
) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    else:
        key = session or await sync_to_async(_session_cookie)(user)
        headers.append((b"cookie", f"sessionid={key}".encode()))
    communicator = WebsocketCommunicator(_application(), path, headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def drain(communicator: WebsocketCommunicator, wait: float = 0.2) -> list[dict[str, Any]]:
    """Every change that arrives within ``wait`` seconds of the previous frame (the items of ``changes`` frames)."""
    frames: list[dict[str, Any]] = []
    # receive_nothing peeks: a receive that times out would cancel the application
    while not await communicator.receive_nothing(timeout=wait):
        frame = await communicator.receive_json_from()
        frames.extend(frame["items"] if frame.get("kind") == "changes" else [frame])
    return frames


@pytest_asyncio.fixture
async def sockets(world: Cast) -> AsyncIterator[dict[str, WebsocketCommunicator]]:
    opened = {"alice": await open_socket(world.alice), "charlie": await open_socket(world.charlie)}
    opened["root"] = await open_socket(world.root)
    yield opened
    for communicator in opened.values():
        await communicator.disconnect()


def ids(frames: list[dict[str, Any]], kind: str) -> set[str]:
    return {str(f.get("id")) for f in frames if f.get("kind") == kind}


@sync_to_async
def private_queue_lifecycle() -> None:
    """team-b's private queue: created, allocated by a cycle's status update, closed, reopened."""
    builders.make_queue("b-private", allowed=("team-b",))
    with transaction.atomic():
        decisions.update_queue_status({"b-private": {"cpu": 2000}})
    queue_services.close_queue(SYSTEM, "b-private")
    queue_services.open_queue(SYSTEM, "b-private")


async def test_private_queue_messages_reach_only_its_tenant(sockets: dict[str, WebsocketCommunicator]) -> None:
    await private_queue_lifecycle()
    alice, charlie, root = [await drain(sockets[n]) for n in ("alice", "charlie", "root")]
    assert "b-private" not in ids(alice, "queue"), alice
    assert "b-private" in ids(charlie, "queue")
    assert "b-private" in ids(root, "queue")  # platform admins see everything
    states = [f.get("state") or f.get("phase") for f in charlie if f.get("id") == "b-private"]
    assert states  # the state changes reached the allowed tenant


async def test_a_deleted_private_queue_is_announced_to_its_tenant_only(
    sockets: dict[str, WebsocketCommunicator],
) -> None:
    await sync_to_async(builders.make_queue)("b-gone", allowed=("team-b",))
    await drain(sockets["charlie"])
    await sync_to_async(queue_services.delete_queue)(SYSTEM, "b-gone")
    alice, charlie = await drain(sockets["alice"]), await drain(sockets["charlie"])
    assert "b-gone" not in ids(alice, "queue")
    assert any(f.get("id") == "b-gone" and f.get("action") == "delete" for f in charlie), charlie


async def test_a_public_queue_reaches_everyone(sockets: dict[str, WebsocketCommunicator]) -> None:
    await sync_to_async(builders.make_queue)("shared-q")
    alice, charlie = await drain(sockets["alice"]), await drain(sockets["charlie"])
    assert "shared-q" in ids(alice, "queue")
    assert "shared-q" in ids(charlie, "queue")


async def test_jobs_and_their_objects_reach_only_their_tenant(
    world: Cast, sockets: dict[str, WebsocketCommunicator]
) -> None:
    await sync_to_async(builders.make_queue)("both", allowed=("team-a", "team-b"))
    await sync_to_async(builders.make_job)("team-b", "b-job", queue="both")
    alice, charlie = await drain(sockets["alice"]), await drain(sockets["charlie"])
    assert "team-b/b-job" in ids(charlie, "job")
    assert not [f for f in alice if "team-b" in str(f.get("id"))], alice


@sync_to_async
def gang(name: str, tenant: Any, namespace: str) -> None:
    """A PodGroup and one pod written as rows (the change log carries them to the sockets)."""
    make_gang(name, 1, namespace=namespace, tenant=tenant)


async def test_every_namespaced_object_goes_to_its_tenant_and_without_one_to_admins_only(
    world: Cast, sockets: dict[str, WebsocketCommunicator]
) -> None:
    await gang("x", world.team_b, "team-b")
    await gang("y", None, "orphan")
    alice, charlie, root = [await drain(sockets[n]) for n in ("alice", "charlie", "root")]
    for kind, suffix in (("podgroup", ""), ("pod", "-0")):
        assert ids(alice, kind) == set()
        assert ids(charlie, kind) == {f"team-b/x{suffix}"}
        assert ids(root, kind) == {f"team-b/x{suffix}", f"orphan/y{suffix}"}


def _node(name: str) -> None:
    Node.objects.create(name=name)


def _priority_class(name: str) -> None:
    PriorityClass.objects.create(name=name, value=1)


@pytest.mark.parametrize(("kind", "write"), [("node", _node), ("priorityclass", _priority_class)])
async def test_cluster_kinds_reach_everyone(kind: str, write: Any, sockets: dict[str, WebsocketCommunicator]) -> None:
    await sync_to_async(write)("n1")
    for name in ("alice", "charlie", "root"):
        assert ids(await drain(sockets[name]), kind) == {"n1"}


async def test_a_cycle_reaches_everyone_over_the_channel_layer(sockets: dict[str, WebsocketCommunicator]) -> None:
    """A kind that is no row of the change log (a scheduling cycle's summary) still goes over the channel layer."""
    await sync_to_async(broadcast.publish)("cycle", "7", binds=1)
    for name in ("alice", "charlie", "root"):
        assert ids(await drain(sockets[name]), "cycle") == {"7"}


async def test_a_subscription_narrows_what_a_socket_gets_never_widens_it(
    world: Cast, sockets: dict[str, WebsocketCommunicator]
) -> None:
    alice = sockets["alice"]
    await alice.send_json_to(
        {"kind": "subscribe", "topics": [["podgroup", ""], ["pod", "team-b/"], ["pod", "team-a/j"]]}
    )
    assert await alice.receive_json_from(timeout=2) == {"kind": "subscribed", "topics": 3}

    @sync_to_async
    def write() -> None:
        with transaction.atomic():
            for tenant, namespace in ((world.team_a, "team-a"), (world.team_b, "team-b")):
                make_gang("j", 1, namespace=namespace, tenant=tenant)
                make_gang("other", 1, namespace=namespace, tenant=tenant)
            Node.objects.create(name="n1")

    await write()
    got = await drain(alice)
    # podgroups of its own tenant, its own pods under the prefix; no team-b pod although subscribed; no node
    assert sorted(f"{f['kind']}:{f['id']}" for f in got) == [
        "pod:team-a/j-0",
        "podgroup:team-a/j",
        "podgroup:team-a/other",
    ]
    assert {str(f["id"]) for f in await drain(sockets["charlie"]) if f["kind"] != "queue"} >= {
        "team-b/j",
        "team-b/j-0",
        "team-b/other-0",
        "n1",
    }


async def test_a_process_reads_each_live_group_once_for_all_its_sockets(
    world: Cast, sockets: dict[str, WebsocketCommunicator]
) -> None:
    """The channel layer holds one member per live group and process (the hub), not one per socket; the change
    log is read once per process (the tailer) for all its sockets; every socket gets what it may read, only that."""
    second = await open_socket(world.alice)  # alice twice, charlie, root: all in the cluster group
    layer = channel_layers["default"]
    assert len(layer.groups["cluster"]) == 1
    assert len(layer.groups[groups.tenant_group(world.team_a.pk)]) == 1
    await sync_to_async(_node)("n7")
    await gang("solo", world.team_a, "team-a")
    got = {name: await drain(sockets[name]) for name in ("alice", "charlie", "root")}
    for frames in got.values():
        assert "n7" in ids(frames, "node")
    assert ids(got["charlie"], "podgroup") == set()
    assert ids(await drain(second), "podgroup") == {"team-a/solo"}
    await second.disconnect()


async def test_a_bad_subscription_is_answered_with_an_error(world: Cast) -> None:
    socket = await open_socket(world.alice)
    await socket.send_json_to({"kind": "subscribe", "topics": [["job", "team-a/"]]})
    assert await socket.receive_json_from(timeout=2) == {"kind": "subscribed", "topics": 1}
    await socket.send_json_to({"kind": "subscribe", "topics": [["job"]]})
    assert (await socket.receive_json_from(timeout=2))["kind"] == "error"
    await socket.disconnect()


async def _assert_closed(communicator: WebsocketCommunicator) -> None:
    output = await communicator.receive_output(timeout=2)
    while output["type"] != "websocket.close":  # frames already on their way may come first
        output = await communicator.receive_output(timeout=2)
    assert output["code"] == consumers.CLOSE_UNAUTHORIZED


_written = iter(range(1_000_000))


async def _job_message_reaches(communicator: WebsocketCommunicator, tenant: Any) -> bool:
    name = f"after-{next(_written)}"
    await gang(name, tenant, "team-a")
    return f"team-a/{name}" in ids(await drain(communicator), "podgroup")


async def test_logout_closes_the_sessions_socket_at_once(world: Cast) -> None:
    client = Client()
    await sync_to_async(client.force_login)(world.alice)
    key = client.cookies["sessionid"].value
    mine = await open_socket(session=key)
    other = await open_socket(world.alice)  # another login of the same user stays open
    response = await sync_to_async(client.post)("/logout/")
    assert response.status_code in (200, 302)
    await _assert_closed(mine)
    assert await _job_message_reaches(other, world.team_a)
    await other.disconnect()


async def test_revoking_a_token_closes_its_socket(world: Cast) -> None:
    token, raw = await sync_to_async(tenancy.create_token)(world.alice, "watch")
    socket = await open_socket(token=raw)
    assert await _job_message_reaches(socket, world.team_a)
    await sync_to_async(tenancy.revoke_token)(world.alice, token.pk)
    await _assert_closed(socket)


async def test_a_revoked_or_unknown_token_cannot_open_a_socket(world: Cast) -> None:
    token, raw = await sync_to_async(tenancy.create_token)(world.alice, "old")
    await sync_to_async(tenancy.revoke_token)(world.alice, token.pk)
    for value in (raw, "not-a-token"):
        headers = [(b"origin", b"http://testserver"), (b"authorization", f"Bearer {value}".encode())]
        communicator = WebsocketCommunicator(_application(), "/ws/live/", headers=headers)
        connected, code = await communicator.connect()
        assert not connected
        assert code == consumers.CLOSE_UNAUTHORIZED


async def test_losing_a_membership_closes_the_socket(world: Cast) -> None:
    socket = await open_socket(world.bob)
    assert await _job_message_reaches(socket, world.team_a)

    @sync_to_async
    def remove() -> None:
        tenancy.remove_membership(Membership.objects.get(user=world.bob, tenant=world.team_a))

    await remove()
    await _assert_closed(socket)
    reopened = await open_socket(world.bob)  # a new socket joins only what bob may still read
    assert not await _job_message_reaches(reopened, world.team_a)
    await reopened.disconnect()


async def test_a_password_change_closes_the_users_sockets(world: Cast) -> None:
    """Issue 28: the socket kept receiving after its user's password was changed (or reset)."""
    key = await sync_to_async(_session_cookie)(world.alice)
    socket = await open_socket(session=key)
    assert await _job_message_reaches(socket, world.team_a)

    @sync_to_async
    def change_password() -> None:
        from django.contrib.auth.models import User

        alice = User.objects.get(pk=world.alice.pk)
        alice.set_password("a new password")
        alice.save()

    await change_password()
    await _assert_closed(socket)
    headers = [(b"origin", b"http://testserver"), (b"host", b"testserver"), (b"cookie", f"sessionid={key}".encode())]
    stale = WebsocketCommunicator(_application(), "/ws/live/", headers=headers)
    connected, _ = await stale.connect()
    assert not connected  # the session the old password made no longer authenticates


async def test_a_non_json_frame_is_answered_and_abuse_closes_politely(world: Cast) -> None:
    socket = await open_socket(world.alice)
    await socket.send_to(text_data="not json {")
    assert (await socket.receive_json_from(timeout=2))["kind"] == "error"
    await socket.send_to(text_data='{"kind": "ping"}')
    assert await socket.receive_json_from(timeout=2) == {"kind": "pong"}
    await socket.send_to(bytes_data=b"\x00\xff")
    assert (await socket.receive_json_from(timeout=2))["kind"] == "error"
    for _ in range(consumers.MAX_BAD_FRAMES - 2):
        await socket.send_to(text_data="[" * 3000)
    output = await socket.receive_output(timeout=2)
    while output["type"] != "websocket.close":
        output = await socket.receive_output(timeout=2)
    assert output["code"] == consumers.CLOSE_POLICY


async def test_an_oversized_frame_closes_the_socket(world: Cast) -> None:
    socket = await open_socket(world.alice)
    await socket.send_to(text_data="x" * (consumers.MAX_FRAME_BYTES + 1))
    output = await socket.receive_output(timeout=2)
    assert output == {"type": "websocket.close", "code": consumers.CLOSE_TOO_BIG}


async def test_sockets_of_one_reader_get_one_frame_built_and_serialised_once(
    world: Cast, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five sockets of alice wake for the same changes: each gets the same frame, serialised once for all of them
    (the fan-out's cost grows with the changes and the readers, not with the sockets)."""
    built: list[int] = []
    real = consumers._frame

    def counted(batches: Any) -> tuple[str, int]:
        hit = tuple(k for k, _ in batches) in consumers._FRAMES
        found = real(batches)
        if not hit:
            built.append(found[1])
        return found

    monkeypatch.setattr(consumers, "_frame", counted)
    consumers._FRAMES.clear()
    opened = [await open_socket(world.alice) for _ in range(5)]
    await gang("shared", world.team_a, "team-a")
    frames = [await drain(socket) for socket in opened]
    assert all(ids(f, "podgroup") == {"team-a/shared"} for f in frames)
    assert all(f == frames[0] for f in frames)
    assert 0 < len(built) < len(opened)  # one frame per wakeup of the tailer, not one per socket
    for socket in opened:
        await socket.disconnect()


async def test_a_socket_starts_at_its_pages_revision_and_gets_what_changed_while_the_page_loaded(world: Cast) -> None:
    """A page rendered at revision R opens its socket with ``?since=R``: a change committed after R and before the
    socket connected (while the page loaded) is sent; without it, that change was never sent."""
    from volcanoweb.feed import log

    first = await open_socket(world.alice)  # the process's tailer runs, as it does under load
    try:
        rendered = (await sync_to_async(log.head)())[0]
        await sync_to_async(builders.make_job)("team-a", "while-loading")
        await drain(first)
        late = await open_socket(world.alice, path=f"/ws/live/?since={rendered}")
        plain = await open_socket(world.alice)
        odd = await open_socket(world.alice, path="/ws/live/?since=-1&since=x")
        try:
            assert "team-a/while-loading" in ids(await drain(late), "job")
            assert "team-a/while-loading" not in ids(await drain(plain), "job")
            assert "team-a/while-loading" not in ids(await drain(odd), "job")  # not a revision: from now
            charlie = await open_socket(world.charlie, path=f"/ws/live/?since={rendered}")
            try:
                assert not [f for f in await drain(charlie) if "team-a" in str(f.get("id"))]  # still its tenant's only
            finally:
                await charlie.disconnect()
        finally:
            for socket in (late, plain, odd):
                await socket.disconnect()
    finally:
        await first.disconnect()


async def test_the_since_parameter_takes_one_plain_revision() -> None:
    assert consumers._since(b"since=42") == 42
    assert consumers._since(b"") is None
    assert consumers._since(b"since=-1") is None
    assert consumers._since(b"since=1e9") is None
    assert consumers._since(b"since=" + b"9" * 30) is None
    assert consumers._since(b"&".join(b"a=%d" % i for i in range(20))) is None


async def test_stats_report_the_processs_feed_and_frame_lags(sockets: dict[str, WebsocketCommunicator]) -> None:
    """A change read from the log and sent in a frame is counted in this process's lag histograms (what
    ``bench e2e`` reads to tell the server's delay from the clients'), which ``stats`` reports beside the socket's
    own counts."""
    from volcanoweb.core.metrics import FEED_READ_LAG, LIVE_FRAME_LAG, bucket_counts

    before = sum(bucket_counts(LIVE_FRAME_LAG).values()), sum(bucket_counts(FEED_READ_LAG).values())
    await sync_to_async(_priority_class)("lagged")
    assert ids(await drain(sockets["alice"]), "priorityclass") == {"lagged"}
    await sockets["alice"].send_json_to({"kind": "stats"})
    stats = await sockets["alice"].receive_json_from()
    assert stats["kind"] == "stats"
    assert stats["frames"] >= 1
    lags = stats["process"]
    assert set(lags) == {"frame_lag", "feed_read_lag"}
    assert list(lags["frame_lag"]) == ["0.05", "0.1", "0.2", "0.5", "1.0", "2.0", "5.0", "10.0", "+Inf"]
    assert sum(lags["frame_lag"].values()) > before[0]  # alice's frame (and the others')
    assert sum(lags["feed_read_lag"].values()) > before[1]
