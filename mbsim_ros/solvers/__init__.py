"""The numerical solvers the contact integrators hand their problems to, compiled, with no
knowledge of integrators or models: the cone QP by an interior-point method (``cone_qp``) on an
envelope Cholesky (``envelope_cholesky``), the compliant rows' laws and their active set of
pushing rows (``cone_solver``), the bounded LCP by PGS-SOR and Dantzig pivoting (``lcp``), and a
dense in-place LU (``lu``). The integrators' side of the hand-over (rows, StepInfo, the
clarabel / osqp references) is ``integrators.row_solvers``."""
