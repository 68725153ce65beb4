"""Staff see jobs in the admin, read-only; people who are not staff see nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.factories import Actor
from tests.jobs.seeding import job_of, run_job, seed_files

pytestmark = pytest.mark.django_db


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_staff_see_jobs_and_their_progress_but_cannot_change_them(owner: Actor) -> None:
    seed_files(owner, ["a", "a/b"])
    job = job_of(owner.post("/v1/folders/move", {"from": "a", "to": "z"}))
    run_job(job.id)
    staff = User.objects.create_user("staff", "s@example.test", "pw", is_staff=True)
    owner.project.staff_users.add(staff)  # staff see the projects granted to them
    client = client_for(staff)

    listing = client.get("/admin/jobs/job/", {"q": job.id})
    assert listing.status_code == 200
    assert job.id in listing.content.decode()
    page = client.get(f"/admin/jobs/job/{job.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "succeeded" in html and "folder.move" in html and owner.project.id in html
    assert 'name="_save"' not in html  # no form to save
    assert client.post(f"/admin/jobs/job/{job.id}/delete/").status_code == 403
    assert client.get("/admin/jobs/job/add/").status_code == 403


def test_a_user_who_is_not_staff_sees_no_job(owner: Actor) -> None:
    seed_files(owner, ["a"])
    job = job_of(owner.post("/v1/folders/delete", {"path": "a"}))
    user = User.objects.create_user("user", "u@example.test", "pw")
    response = client_for(user).get(f"/admin/jobs/job/{job.id}/change/")
    assert response.status_code in {302, 403}
    assert job.id not in response.content.decode()
