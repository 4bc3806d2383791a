"""TLS between tasks: certificates from a test CA (made with the openssl command line);
a client without a certificate signed by the CA is refused."""

import shutil
import subprocess

import numpy as np
import pytest

import tensorweave.compat.v1 as tf
from tensorweave.distribute import Cluster, Server, TlsConfig
from tensorweave.distribute.master import compile_for_cluster
from tensorweave.errors import UnavailableError
from tensorweave.runtime.distributed import rpc

from .cluster_helpers import TOKEN, make_cluster

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the openssl command makes the test certificates")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=tw-ca",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("task", "rogue"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout",
                 f"{name}.key", "-out", f"{name}.csr", cwd=d)
        ca = ("ca.pem", "ca.key") if name == "task" else (None, None)
        if ca[0]:
            _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                     "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out",
                     f"{name}.pem", cwd=d)
        else:  # self-signed: not from the cluster's CA
            _openssl("x509", "-req", "-in", f"{name}.csr", "-signkey", f"{name}.key", "-days",
                     "2", "-extfile", "san.cnf", "-out", f"{name}.pem", cwd=d)
    return d


def test_tasks_talk_over_tls_and_refuse_certificates_from_elsewhere(pki):
    tls = TlsConfig(str(pki / "task.key"), str(pki / "task.pem"), str(pki / "ca.pem"))
    spec = make_cluster(ps=1, worker=1)
    servers = [Server(spec, job, 0, token=TOKEN, tls=tls) for job in ("ps", "worker")]
    try:
        g = tf.Graph()
        with g.as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.constant(np.arange(4, dtype=np.float32)) * 2.0
            with tf.device("/job:worker/task:0"):
                out = a + 1.0
        cluster = Cluster(cluster=spec, task="/job:worker/task:0", token=TOKEN, tls=tls)
        from tensorweave.passes.prune import extract_subgraph
        exe = compile_for_cluster(extract_subgraph(g.ir, [out.value], [], []), cluster, "cpu")
        (got,) = exe()
        np.testing.assert_array_equal(got, [1, 3, 5, 7])
        rogue = TlsConfig(str(pki / "rogue.key"), str(pki / "rogue.pem"), str(pki / "ca.pem"))
        with pytest.raises(UnavailableError):
            rpc.WorkerClient(spec.task_address("ps", 0), TOKEN, rogue).call(
                "GetStatus", {}, timeout=5)
        with pytest.raises(UnavailableError):  # plaintext to a TLS port
            rpc.WorkerClient(spec.task_address("ps", 0), TOKEN).call("GetStatus", {}, timeout=5)
    finally:
        for s in servers:
            s.stop(grace=0.2)
