"""Impacts: a Hertz contact row whose closing speed the step cannot resolve is set on energy
and on Newton's restitution, not on force (docs/COMPLIANT.md, "Impacts").

A steel ball's impact lasts 0.17 ms: a step of 1 ms cannot follow the Hertz force through it,
and a row whose force is taken at either end of the step returns none of the impact's energy
(with q1 = q0 + h v1, an impulse gamma on a row of effective mass m_i loses gamma^2 / (2 m_i)).
So a Hertz normal row in an impact is a (nearly) rigid row with a target velocity w1, in three
phases:

- loading, from a closing speed above IMPACT_GRAVITY_STEPS steps of gravity (an impact, not a
  resting contact), while the row's kinetic energy is at least TURN_SHARE of its energy: w1 is
  the closing root of the row's energy balance in its one-row model (m_i = 1 / W_ii,
  step-start velocity w0, free velocity u, depth d0; U(d) = 2/5 K d^(5/2), K = 4/3 E* sqrt(R):
  Johnson 1985, "Contact Mechanics", eq. 4.23)

      f(w) = m_i w^2 / 2 - m_i (u - w0) w + U(d0 - h w) - (m_i w0^2 / 2 + U(d0)) = 0

  (the external forces' work over the step's displacement h w on the left; f is convex with
  f(0) <= 0): the step ends where the energy puts it, so the peak depth is Hertz's whatever the
  step (energy-consistent contact integration in the sense of Laursen and Chawla 1997, "Design
  of energy conserving algorithms for frictional dynamic contact problems", and Armero and
  Petocz 1998, "Formulation and analysis of conserving algorithms for frictionless dynamic
  contact/impact problems");
- the turn, the step after the kinetic share fell below TURN_SHARE, and unloading while the
  overlap lasts and the row is not closing again (then something else loads it: the ordinary
  law takes over, as it does once the row is out): w1 = e v_c, Newton's restitution law on
  the row's closing speed v_c when its gap closed (remembered from the first loading step).
  Newton's law, not the released energy of each row: a row's own energy (with its m_i)
  over-counts when rows share mobility (a stack of spheres gains energy at every contact).
- With e = 0 (a perfectly plastic impact), the row leaves the overlap no faster than an
  impact, w1 = min(d0 / h, IMPACT_GRAVITY_STEPS h |g|): the energy stored in the overlap is not
  returned at any step size (the ball's rebound is (2 h g)^2 / (2 g), 20 um at 1 ms).

e is the contact's: the smaller of its two bodies' restitutions (a shape's own, else the
ground's; pair_restitution). Which phase a contact is in, and its v_c, are remembered from the
last step by its bodies, shape and point (the nearest within the margin).
"""
from __future__ import annotations

import math

from .._jit import kernel, step

LOADING, UNLOADING = 1, 2
TURN_SHARE = 0.1  # a loading row turns once its kinetic energy is below this share (peak -4 %)
IMPACT_GRAVITY_STEPS = 2.0  # an impact: a closing speed above this many steps of gravity
# E^-1 of a row set on energy, relative to its W_ii: nearly rigid (the target is met to 1e-6 of
# the impulse's effect), never singular (four corners of a box landing flat are four rows for
# three degrees of freedom)
IMPACT_COMPLIANCE = 1e-6


@step
def hertz_energy(K: float, d: float) -> float:
    """U(d) = 2/5 K d^(5/2), zero out of contact."""
    return 0.4 * K * d * d * math.sqrt(d) if d > 0.0 else 0.0


@step
def closing_root(m: float, w0: float, u: float, d0: float, h: float, K: float) -> float:
    """The closing (negative) root of the row's energy balance f (module docstring), by Newton
    from a point beyond it (f convex, positive there: the iterates approach monotonically)."""
    pull = u - w0
    energy = 0.5 * m * w0 * w0 + hertz_energy(K, d0)
    w = -(1.0 + 1e-9) * (abs(pull) + math.sqrt(pull * pull + 2.0 * energy / m)) - 1e-12
    for _ in range(100):
        d = d0 - h * w
        f = 0.5 * m * w * w - m * pull * w + hertz_energy(K, d) - energy
        slope = m * w - m * pull - (h * K * d * math.sqrt(d) if d > 0.0 else 0.0)
        if slope == 0.0:
            break
        change = f / slope
        w -= change
        if abs(change) <= 1e-14 * (abs(w) + 1e-12):
            break
    return w


@step
def contact_speed(w0: float, u: float, distance: float, h: float) -> float:
    """The row's closing speed when its gap closes, under the step's constant acceleration
    (u - w0) / h: sqrt(w0^2 - 2 a distance); |w0| when it already overlaps."""
    if distance <= 0.0:
        return abs(w0)
    return math.sqrt(max(w0 * w0 - 2.0 * (u - w0) / h * distance, 0.0))


@step
def remembered(memory_int, memory_real, count: int, a: int, other: int, shape: int, x,
               reach: float) -> int:
    """The memory entry of this contact (-1: none): the remembered contact of the same bodies
    and shape nearest to point x, within reach."""
    best, found = reach * reach, -1
    for e in range(count):
        if memory_int[e, 0] != a or memory_int[e, 1] != other or memory_int[e, 2] != shape:
            continue
        dx = memory_real[e, 0] - x[0]
        dy = memory_real[e, 1] - x[1]
        dz = memory_real[e, 2] - x[2]
        distance = dx * dx + dy * dy + dz * dz
        if distance <= best:
            best, found = distance, e
    return found


@step
def pair_restitution(shape_e, own: int, other: int, ground: float) -> float:
    """The restitution of a contact between shapes own and other (-1: the ground): the smaller
    of theirs, a shape without its own (NaN) taking the ground's."""
    mine = shape_e[own] if math.isfinite(shape_e[own]) else ground
    theirs = shape_e[other] if other >= 0 and math.isfinite(shape_e[other]) else ground
    return min(mine, theirs)


@step
def row_velocity(G, r: int, v) -> float:
    """Row r's velocity G[r] v."""
    total = 0.0
    for i in range(v.shape[0]):
        total += G[r, i] * v[i]
    return total


@kernel
def impact_rows(h, e_star, restitution, impact_speed, reach, contact_int, contact_real, n,
                shape_k, shape_e, v, G, W, u, phi, k, b, memory_int, memory_real, memory_count,
                phase, speed):
    """Set the normal rows of the Hertz contacts in an impact on energy (module docstring):
    nearly rigid rows with the target velocity w1 (E^-1 = 1 / (h^2 k) = IMPACT_COMPLIANCE W_ii,
    b = 0, so the law's c = u + phi / h with phi = -h w1); phase[c] and speed[c] the
    phase contact c takes in this step (0: the ordinary law) and its impact speed. A contact's
    restitution: pair_restitution of its two shapes (shape_e) and the ground's (restitution)."""
    count = memory_count[0]
    for c in range(n):
        phase[c] = 0
        if math.isfinite(shape_k[contact_int[c, 2]]):  # an elastic foundation's own law
            continue
        r = 3 * c
        distance = contact_real[c, 6]
        w0 = row_velocity(G, r, v)
        entry = remembered(memory_int, memory_real, count, contact_int[c, 0],
                           contact_int[c, 1], contact_int[c, 2], contact_real[c], reach)
        before = memory_int[entry, 3] if entry >= 0 else 0
        K = 4.0 / 3.0 * e_star * math.sqrt(contact_real[c, 7])
        m = 1.0 / W[r, r]
        d0 = -distance
        kinetic = 0.5 * m * w0 * w0
        if before == 0:
            if not (w0 < -impact_speed and distance + h * u[r] < 0.0):
                continue
            now, speed[c] = LOADING, contact_speed(w0, u[r], distance, h)
        else:
            speed[c] = memory_real[entry, 3]
            if before == LOADING and w0 < 0.0 and kinetic >= TURN_SHARE * (
                    kinetic + hertz_energy(K, d0)):
                now = LOADING
            elif d0 > 0.0 and (before == LOADING or w0 >= 0.0):
                now = UNLOADING
            else:  # out of the overlap, or closing again (a new load): the ordinary law
                continue
        e = pair_restitution(shape_e, contact_int[c, 2], contact_int[c, 3], restitution)
        if now == LOADING:
            w1 = closing_root(m, w0, u[r], d0, h, K)
        elif e > 0.0:  # Newton: out at e times the impact speed
            w1 = e * speed[c]
        else:  # e = 0: out of the overlap no faster than an impact
            w1 = min(d0 / h, impact_speed)
        phase[c] = now
        phi[r], k[r], b[r] = -h * w1, m / (IMPACT_COMPLIANCE * h * h), 0.0


@kernel
def remember_impacts(contact_int, contact_real, n, phase, speed, memory_int, memory_real,
                     memory_count):
    """Keep this step's contacts in an impact phase, and their impact speeds, for the next
    step (impact_rows)."""
    count = 0
    for c in range(n):
        if phase[c] == 0:
            continue
        for j in range(3):
            memory_int[count, j] = contact_int[c, j]
            memory_real[count, j] = contact_real[c, j]
        memory_int[count, 3] = phase[c]
        memory_real[count, 3] = speed[c]
        count += 1
    memory_count[0] = count
