// Ctrl-C for training loops: while an InterruptGuard lives, the first SIGINT only sets a flag that
// the loop polls (the Learner finishes the current step, writes a checkpoint and returns); a
// second SIGINT restores the terminal and ends the process the default way.
//
//   # auto step = [] {};
//   train::InterruptGuard guard;
//   while (!guard.requested()) step();
#pragma once

namespace ember::train {

// Turns the first Ctrl-C into a flag a training loop polls (see the header comment); the Learner makes one
// unless LearnerConfig::handle_sigint is off.
class InterruptGuard {
 public:
  InterruptGuard();   // installs the SIGINT handler (one guard at a time; nested ones share it)
  ~InterruptGuard();  // restores the previous handler
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  bool requested() const;  // a SIGINT arrived since the guard was made (or clear())
  void clear();            // Forgets SIGINTs received so far (requested() is false again).
};

}  // namespace ember::train
