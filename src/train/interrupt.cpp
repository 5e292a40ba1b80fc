// SIGINT handling: a flag on the first signal, the default action on the second.
#include "ember/train/interrupt.hpp"

#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "terminal_state.hpp"

namespace ember::train {
namespace {

volatile sig_atomic_t g_count = 0;
struct sigaction g_previous;
std::mutex g_mu;
int g_guards = 0;

termios g_termios;
volatile sig_atomic_t g_termios_saved = 0;

void on_sigint(int) {
  g_count = g_count + 1;
  if (g_count < 2) {
    const char msg[] = "\r\nstopping after the current step (press Ctrl-C again to abort)\r\n";
    if (!g_termios_saved) (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    return;
  }
  detail::restore_terminal_from_signal();
  const char msg[] = "\r\naborted\r\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGINT, &dfl, nullptr);
  ::raise(SIGINT);  // delivered when this handler returns
}

}  // namespace

namespace detail {
void save_terminal_state() {
  if (::tcgetattr(STDIN_FILENO, &g_termios) == 0) g_termios_saved = 1;
}
void forget_terminal_state() { g_termios_saved = 0; }
void restore_terminal_from_signal() {
  if (!g_termios_saved) return;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &g_termios);
  // Leave the alternate screen, show the cursor, reset attributes.
  const char seq[] = "\x1b[?1049l\x1b[?25h\x1b[0m";
  (void)!::write(STDOUT_FILENO, seq, sizeof seq - 1);
}
}  // namespace detail

InterruptGuard::InterruptGuard() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_guards++ > 0) return;
  g_count = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (--g_guards > 0) return;
  ::sigaction(SIGINT, &g_previous, nullptr);
}

bool InterruptGuard::requested() const { return g_count > 0; }
void InterruptGuard::clear() { g_count = 0; }

}  // namespace ember::train
