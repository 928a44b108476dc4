"""DDS domains claimed per process (mbsim_ros.ros.domains): two claims never share a domain, a
claim ends with its process however it ends, and a domain whose discovery port another program
holds is passed over."""
import os
import socket
import subprocess
import sys

from mbsim_ros.ros.domains import FIRST, LAST, claim_domain, discovery_ports

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def test_claims_in_one_host_are_distinct_and_in_range():
    claims = [claim_domain(start=FIRST) for _ in range(3)]
    try:
        ids = [claim.domain_id for claim in claims]
        assert len(set(ids)) == 3 and all(FIRST <= d <= LAST for d in ids)
        assert claims[0].env == {"ROS_DOMAIN_ID": str(ids[0]),
                                 "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    finally:
        for claim in claims:
            claim.release()


def test_another_process_cannot_take_a_held_domain_until_it_is_released():
    claim = claim_domain(start=FIRST)
    ask = [sys.executable, "-c", "from mbsim_ros.ros.domains import claim_domain; "
           f"c = claim_domain(start={claim.domain_id}); print(c.domain_id)"]
    try:
        held = int(subprocess.run(ask, capture_output=True, text=True, env=ENV,
                                  check=True).stdout)
        assert held != claim.domain_id
    finally:
        claim.release()
    free = int(subprocess.run(ask, capture_output=True, text=True, env=ENV, check=True).stdout)
    assert free == claim.domain_id


def test_a_killed_holder_frees_its_domain():
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from mbsim_ros.ros.domains import claim_domain; "
         f"c = claim_domain(start={FIRST}); print(c.domain_id, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env=ENV)
    domain = int(holder.stdout.readline())
    other = claim_domain(start=domain)
    other.release()
    assert other.domain_id != domain
    holder.kill()
    holder.wait()
    again = claim_domain(start=domain)
    try:
        assert again.domain_id == domain
    finally:
        again.release()


def test_a_domain_whose_discovery_port_is_bound_is_passed_over():
    probe = claim_domain(start=FIRST)
    domain = probe.domain_id
    probe.release()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as participant:
        participant.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        participant.bind(("0.0.0.0", discovery_ports(domain)[1]))
        claim = claim_domain(start=domain)
        try:
            assert claim.domain_id != domain
        finally:
            claim.release()
