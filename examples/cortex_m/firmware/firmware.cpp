// The program examples/cortex_m runs, on the Cortex-M4 (in QEMU) and natively: it runs a model
// that `ember-onnx generate --target cortex-m` wrote on the test inputs linked into the image and
// prints, per input, the predicted class and the outputs' float32 bits in hexadecimal (exact, and
// no printf needed). On the target it also prints the SysTick ticks the inferences took, a
// calibration (ticks for a loop of known instruction count) and the stack it used. CMakeLists.txt
// here builds it with -DMODEL=name -DMODEL_HEADER='"name.hpp"'.
//
// Output, one line each:
//   model NAME inputs N outputs K
//   calibration INSTRUCTIONS TICKS        (target only)
//   I CLASS XXXXXXXX XXXXXXXX ...         (per input)
//   ticks T                               (target only: SysTick ticks of all N inferences)
//   stack B                               (target only: bytes of stack used)
//   done
#include <cstdint>
#if !defined(__arm__)
#include <cstdio>
#endif

#include "ember/core/bit.hpp"
#include MODEL_HEADER

#define EMBER_STRINGIFY2(x) #x
#define EMBER_STRINGIFY(x) EMBER_STRINGIFY2(x)

extern "C" const float test_inputs[];     // N inputs of MODEL::kInputSize floats (.incbin)
extern "C" const char test_inputs_end[];  // one past the last byte

namespace {

#if defined(__arm__)
extern "C" void semihosting_write(const char* text);
extern "C" uint32_t stack_bytes_used(void);
void write(const char* text) { semihosting_write(text); }

// SysTick, the Cortex-M's 24-bit down-counter, on the processor clock. Under
// `qemu-system-arm -icount shift=0` the emulated clock advances 1 ns per instruction, so ticks
// count instructions (scaled by the calibration).
volatile uint32_t& systick(uint32_t offset) { return *reinterpret_cast<volatile uint32_t*>(0xE000E010u + offset); }
void systick_start() {
  systick(4) = 0xFFFFFFu;  // LOAD
  systick(8) = 0;          // VAL
  systick(0) = 5;          // CTRL: enable, processor clock, no interrupt
}
uint32_t ticks() { return systick(8); }
uint32_t elapsed(uint32_t start, uint32_t end) { return (start - end) & 0xFFFFFFu; }

// A loop of exactly 2 * n + 1 instructions (subs + bne per turn, the final mov), for calibration.
uint32_t calibration_ticks(uint32_t n) {
  const uint32_t start = ticks();
  __asm__ volatile(
      "mov r0, %0\n"
      "1: subs r0, r0, #1\n"
      "bne 1b\n" ::"r"(n)
      : "r0", "cc");
  return elapsed(start, ticks());
}
#else
void write(const char* text) { std::fputs(text, stdout); }
#endif

// A line under construction (no heap, no printf).
struct Line {
  char text[1024];
  int32_t size = 0;
  Line& add(const char* s) {
    while (*s && size < int32_t(sizeof text) - 2) text[size++] = *s++;
    return *this;
  }
  Line& add(uint32_t v) {
    char digits[12];
    int32_t n = 0;
    do digits[n++] = char('0' + v % 10);
    while ((v /= 10) != 0 && n < 11);
    while (n > 0 && size < int32_t(sizeof text) - 2) text[size++] = digits[--n];
    return *this;
  }
  Line& hex(uint32_t v) {
    for (int32_t shift = 28; shift >= 0 && size < int32_t(sizeof text) - 2; shift -= 4)
      text[size++] = "0123456789abcdef"[(v >> shift) & 0xFu];
    return *this;
  }
  void end() {
    text[size++] = '\n';
    text[size] = '\0';
    write(text);
    size = 0;
  }
};

}  // namespace

int main() {
  const uint32_t count = uint32_t((test_inputs_end - reinterpret_cast<const char*>(test_inputs)) /
                                  int32_t(sizeof(float)) / MODEL::kInputSize);
  Line line;
  line.add("model ")
      .add(EMBER_STRINGIFY(MODEL))
      .add(" inputs ")
      .add(count)
      .add(" outputs ")
      .add(uint32_t(MODEL::kOutputSize))
      .end();
#if defined(__arm__)
  systick_start();
  const uint32_t calibration_turns = 500000;
  line.add("calibration ").add(2 * calibration_turns + 1).add(" ").add(calibration_ticks(calibration_turns)).end();
  uint32_t total_ticks = 0;
#endif
  float output[MODEL::kOutputSize];
  for (uint32_t i = 0; i < count; ++i) {
#if defined(__arm__)
    const uint32_t start = ticks();
#endif
    const ember::kernels::Status status = MODEL::run(test_inputs + i * MODEL::kInputSize, output);
#if defined(__arm__)
    total_ticks += elapsed(start, ticks());
#endif
    if (status != ember::kernels::Status::ok) {
      line.add("error ").add(ember::kernels::last_error()).end();
      return 1;
    }
    uint32_t best = 0;
    for (uint32_t k = 1; k < uint32_t(MODEL::kOutputSize); ++k)
      if (output[k] > output[best]) best = k;
    line.add(i).add(" ").add(best);
    for (int32_t k = 0; k < MODEL::kOutputSize; ++k) line.add(" ").hex(ember::bit_cast<uint32_t>(output[k]));
    line.end();
  }
#if defined(__arm__)
  line.add("ticks ").add(total_ticks).end();
  line.add("stack ").add(stack_bytes_used()).end();
#endif
  line.add("done").end();
  return 0;
}
