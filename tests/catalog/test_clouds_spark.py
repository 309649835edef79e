"""Every store kind written and read through Spark on S3, GCS and Azure (their emulators), in a
Spark of its own: its Python workers inherit the emulators' environment from its JVM, which the
suite's shared session started without."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.emulators.servers import Cloud

pytestmark = pytest.mark.spark

JOB = Path(__file__).resolve().parents[1] / "emulators" / "spark_job.py"


def test_every_kind_through_spark_on_every_cloud(
    s3_cloud: Cloud, gcs_cloud: Cloud, azure_cloud: Cloud, spark_env: dict[str, str]
) -> None:
    clouds = [s3_cloud, gcs_cloud, azure_cloud]
    env = {**spark_env}
    for cloud in clouds:
        env.update(cloud.env)
    done = subprocess.run(
        [sys.executable, str(JOB), *(c.root for c in clouds)],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [line["root"] for line in lines] == [c.root for c in clouds]
    t = "2024-05-01T09:{:02d}:00+00:00".format
    expected = {
        "keyvalue": [["a", 10], ["b", 2]],
        "timestamped": [["EUR", 1.3, t(3)], ["GBP", 1.2, t(2)]],
        "versioned": [["EUR", 1.3, t(3), None], ["GBP", 1.2, t(2), None]],  # valid_to: latest
        "window": [["clicks", t(0), t(5), 3], ["clicks", t(5), t(10), 4], ["views", t(5), t(10), 9]],
        "session": [["u1", t(0), t(7), 2], ["u1", t(10), t(12), 5], ["u2", t(3), t(3), 1]],
    }
    for line in lines:
        assert line["kinds"] == expected, line["root"]
    for cloud in clouds:  # the commits went through the conditional create, counted
        assert cloud.server.writes() > 0


def test_missing_s3_credentials_reach_a_spark_user_as_one_coded_line(
    s3_cloud: Cloud, spark_env: dict[str, str], tmp_path: Path
) -> None:
    """Before: botocore's NoCredentialsError traceback from inside Spark's wrapper."""
    env = {**spark_env, **s3_cloud.env, "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_EC2_METADATA_DISABLED": "true"}  # fmt: skip
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, str(JOB), "--error", s3_cloud.root],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    error = next(json.loads(line)["error"] for line in done.stdout.splitlines() if line.startswith("{"))
    assert f"[STORAGE_CREDENTIALS] option 'root' {s3_cloud.root} is on the s3 backend" in error
    assert "AWS_ACCESS_KEY_ID" in error
    assert "NoCredentialsError: " not in error  # the library's exception is named, not dumped
