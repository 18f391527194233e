// Pinocchio's C++ per-state times of crba, rnea, aba, all three in sequence, and
// crba + nonLinearEffects (M and h),
// without Python in the loop: the reference of issue 19's rigid-body target.
// Built and run by experiments/bench_pinocchio_cpp.py (see there for the flags).
// Usage: ./pinocchio_bench <urdf path> [n_states=4096] [repeats=20]
// States: q ~ U(-pi, pi), v ~ N(0, 2^2), a ~ N(0, 5^2), tau ~ N(0, 10^2), as
// experiments/_common.random_robot_states (another generator: the same laws).
#include <pinocchio/multibody/model.hpp>
#include <pinocchio/multibody/data.hpp>
#include <pinocchio/parsers/urdf.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/config.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.urdf [n_states] [repeats]\n", argv[0]);
    return 1;
  }
  const std::string path = argv[1];
  const int N = argc > 2 ? std::atoi(argv[2]) : 4096;
  const int R = argc > 3 ? std::atoi(argv[3]) : 20;

  pinocchio::Model model;
  pinocchio::urdf::buildModel(path, model);  // fixed base, like pin.buildModelFromUrdf
  pinocchio::Data data(model);

  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> uq(-M_PI, M_PI);
  std::normal_distribution<double> nv_(0.0, 2.0), na(0.0, 5.0), nt(0.0, 10.0);

  bool need_randcfg = false;
  for (pinocchio::JointIndex j = 1; j < (pinocchio::JointIndex)model.njoints; ++j)
    if (model.joints[j].nq() != model.joints[j].nv()) need_randcfg = true;

  std::vector<Eigen::VectorXd> qs(N), vs(N), as(N), ts(N);
  for (int i = 0; i < N; ++i) {
    Eigen::VectorXd q(model.nq);
    if (need_randcfg) q = pinocchio::randomConfiguration(model);
    for (pinocchio::JointIndex j = 1; j < (pinocchio::JointIndex)model.njoints; ++j) {
      const auto &jm = model.joints[j];
      if (jm.nq() == jm.nv())
        for (int k = 0; k < jm.nq(); ++k) q[jm.idx_q() + k] = uq(rng);
    }
    qs[i] = q;
    vs[i].resize(model.nv); as[i].resize(model.nv); ts[i].resize(model.nv);
    for (int k = 0; k < model.nv; ++k) {
      vs[i][k] = nv_(rng); as[i][k] = na(rng); ts[i][k] = nt(rng);
    }
  }

  std::printf("pinocchio %s  model=%s nq=%d nv=%d njoints=%d  N=%d repeats=%d\n",
              PINOCCHIO_VERSION, model.name.c_str(), model.nq, model.nv,
              (int)model.njoints, N, R);
#ifdef PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION
  std::printf("build: PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION (algorithms from libpinocchio_default.so)\n");
#else
  std::printf("build: header-only (algorithms compiled inline in this binary)\n");
#endif

  double checksum = 0.0;
  auto run = [&](const char *name, int which) {
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < R; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < N; ++i) {
        if (which == 0 || which == 3) {
          pinocchio::crba(model, data, qs[i]);
          checksum += data.M(0, 0);
        }
        if (which == 1 || which == 3) {
          pinocchio::rnea(model, data, qs[i], vs[i], as[i]);
          checksum += data.tau(0);
        }
        if (which == 2 || which == 3) {
          pinocchio::aba(model, data, qs[i], vs[i], ts[i]);
          checksum += data.ddq(0);
        }
        if (which == 4) {  // M and h = C(q, v) v + g (rnea at zero acceleration)
          pinocchio::crba(model, data, qs[i]);
          pinocchio::nonLinearEffects(model, data, qs[i], vs[i]);
          checksum += data.M(0, 0) + data.nle(0);
        }
      }
      auto t1 = Clock::now();
      double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
      if (us < best) best = us;
    }
    std::printf("RESULT %-5s best_us_per_state=%.4f  (best loop %.1f us over %d states)\n",
                name, best / N, best, N);
  };
  run("crba", 0);
  run("rnea", 1);
  run("aba", 2);
  run("all3", 3);
  run("mh", 4);
  std::printf("checksum=%.17g\n", checksum);
  return 0;
}
