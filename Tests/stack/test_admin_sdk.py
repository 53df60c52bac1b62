"""The real Firebase Admin SDK for Python (7.x) against the stack in emulator mode
(FIREBASE_AUTH_EMULATOR_HOST, admin token `owner`): API.md A.1, B.2.3, B.8."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from conftest import expect_ok

firebase_admin = pytest.importorskip("firebase_admin")
from firebase_admin import auth, tenant_mgt  # noqa: E402


@pytest.fixture(scope="module")
def app(stack, tmp_path_factory):
    assert stack.admin_token == "owner", "the test stack must run with TESSERA_ADMIN_TOKEN=owner"
    os.environ["FIREBASE_AUTH_EMULATOR_HOST"] = stack.url.removeprefix("http://")
    # auth_for_tenant insists on a credential even in emulator mode; a throw-away service account
    # satisfies it and is never used for a call (nothing here reaches Google).
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    account = {
        "type": "service_account", "project_id": stack.project_id, "private_key_id": "test",
        "private_key": key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode(),
        "client_email": f"test@{stack.project_id}.iam.gserviceaccount.com", "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    credential = firebase_admin.credentials.Certificate(account)
    application = firebase_admin.initialize_app(credential, {"projectId": stack.project_id},
                                                name=f"tessera-{uuid.uuid4().hex[:6]}")
    yield application
    firebase_admin.delete_app(application)
    os.environ.pop("FIREBASE_AUTH_EMULATOR_HOST", None)


def address() -> str:
    return f"sdk-{uuid.uuid4().hex[:12]}@example.com"


def phone() -> str:
    return "+1555" + str(uuid.uuid4().int)[:7]


def test_create_get_update_and_delete_users(app):
    uid = f"sdk-{uuid.uuid4().hex[:10]}"
    email, number = address(), phone()
    created = auth.create_user(uid=uid, email=email, password="secret123", display_name="Ada",
                               email_verified=False, phone_number=number, app=app)
    assert created.uid == uid and created.email == email and created.display_name == "Ada"
    assert created.phone_number == number and not created.disabled
    assert [p.provider_id for p in created.provider_data] == ["password"]
    assert created.user_metadata.creation_timestamp > 0

    assert auth.get_user_by_email(email.upper(), app=app).uid == uid
    assert auth.get_user_by_phone_number(number, app=app).uid == uid
    result = auth.get_users([auth.UidIdentifier(uid), auth.EmailIdentifier("nobody@example.com")], app=app)
    assert [u.uid for u in result.users] == [uid] and len(result.not_found) == 1

    updated = auth.update_user(uid, disabled=True, email_verified=True, display_name=auth.DELETE_ATTRIBUTE, app=app)
    assert updated.disabled and updated.email_verified and updated.display_name is None
    with pytest.raises(auth.EmailAlreadyExistsError):
        auth.create_user(email=email, app=app)
    with pytest.raises(auth.UidAlreadyExistsError):
        auth.create_user(uid=uid, app=app)

    auth.delete_user(uid, app=app)
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(uid, app=app)


def test_custom_claims_appear_in_the_next_id_token(app, client, verifier):
    email = address()
    user = auth.create_user(email=email, password="secret123", app=app)
    auth.set_custom_user_claims(user.uid, {"admin": True, "level": 3}, app=app)
    assert auth.get_user(user.uid, app=app).custom_claims == {"admin": True, "level": 3}
    with pytest.raises(ValueError):
        auth.set_custom_user_claims(user.uid, {"sub": "x"}, app=app)  # reserved, refused client-side
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword", {"email": email, "password": "secret123"}))
    claims = verifier.verify(signed_in["idToken"])
    assert claims["admin"] is True and claims["level"] == 3
    auth.set_custom_user_claims(user.uid, None, app=app)
    assert auth.get_user(user.uid, app=app).custom_claims is None
    refreshed = client.refresh(signed_in["refreshToken"])
    assert "admin" not in verifier.verify(refreshed["id_token"])
    auth.delete_user(user.uid, app=app)


def test_revoke_refresh_tokens_then_verify_with_check_revoked(app, client):
    email = address()
    user = auth.create_user(email=email, password="secret123", app=app)
    signed_in = expect_ok(client.post("/v1/accounts:signInWithPassword", {"email": email, "password": "secret123"}))
    decoded = auth.verify_id_token(signed_in["idToken"], check_revoked=True, app=app)
    assert decoded["uid"] == user.uid
    time.sleep(1.1)
    auth.revoke_refresh_tokens(user.uid, app=app)
    with pytest.raises(auth.RevokedIdTokenError):
        auth.verify_id_token(signed_in["idToken"], check_revoked=True, app=app)
    assert client.refresh_raw(signed_in["refreshToken"]).json()["error"]["message"] == "TOKEN_EXPIRED"
    auth.delete_user(user.uid, app=app)


def test_tenant_scoped_client_lists_pages_and_deletes_in_batch(app, make_tenant):
    tenant_id = make_tenant()["tenantId"]
    tenant_auth = tenant_mgt.auth_for_tenant(tenant_id, app=app)
    uids = sorted(tenant_auth.create_user(email=address(), password="secret123").uid for _ in range(5))
    assert tenant_auth.get_user(uids[0]).tenant_id == tenant_id
    # Not visible from the default scope.
    with pytest.raises(auth.UserNotFoundError):
        auth.get_user(uids[0], app=app)

    page = tenant_auth.list_users(max_results=2)
    seen = [u.uid for u in page.users]
    assert len(seen) == 2 and page.has_next_page
    assert sorted(u.uid for u in page.iterate_all()) == uids
    pages = 0
    while page:
        pages += 1
        page = page.get_next_page()
    assert pages == 3

    tenant_auth.update_user(uids[0], disabled=True)
    result = tenant_auth.delete_users(uids)
    assert result.success_count == 5 and result.failure_count == 0
    assert list(tenant_auth.list_users().iterate_all()) == []
