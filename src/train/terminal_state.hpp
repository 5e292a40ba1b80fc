// Internal: the terminal settings to put back if a second SIGINT ends the process while the
// dashboard owns the screen (async-signal-safe: tcsetattr and write only).
#pragma once

namespace ember::train::detail {

void save_terminal_state();        // before the dashboard takes the terminal
void forget_terminal_state();      // after it gave it back
void restore_terminal_from_signal();  // from a signal handler

}  // namespace ember::train::detail
