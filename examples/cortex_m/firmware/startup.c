/* Start-up code for a Cortex-M4F without an operating system (examples/cortex_m, linked with
   mps2_an386.ld): the vector table, and a reset handler that copies .data from flash, zeroes
   .bss, enables the FPU, fills the stack with a pattern (so the firmware can report how deep it
   went), runs static constructors, calls main() and ends the emulation over semihosting. Faults
   end it too, with a failure status. Porting to a board: keep this file, add the board's
   interrupt handlers to the table and its clock set-up before main (docs/embedded.md). */
#include <stdint.h>

extern uint32_t __data_load__, __data_start__, __data_end__, __bss_start__, __bss_end__;
extern uint32_t __stack_limit__, __stack_top__;
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);

int main(void);
void reset_handler(void);
void fault_handler(void);
void semihosting_exit(int failed);

#define STACK_PATTERN 0xDEADBEEFu

/* Cortex-M system exceptions: initial SP, reset, NMI, HardFault, MemManage, BusFault, UsageFault,
   4 reserved, SVCall, DebugMonitor, reserved, PendSV, SysTick. */
__attribute__((section(".vectors"), used)) void* const vector_table[16] = {
    &__stack_top__, (void*)reset_handler, (void*)fault_handler, (void*)fault_handler,
    (void*)fault_handler, (void*)fault_handler, (void*)fault_handler, 0, 0, 0, 0,
    (void*)fault_handler, (void*)fault_handler, 0, (void*)fault_handler, (void*)fault_handler,
};

/* ARM semihosting: the operation in r0, its argument in r1, BKPT 0xAB (Thumb). */
static uint32_t semihosting_call(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void semihosting_write(const char* text) { semihosting_call(0x04, text); } /* SYS_WRITE0 */

void semihosting_exit(int failed) {
  /* SYS_EXIT with ADP_Stopped_ApplicationExit (QEMU exits with 0) or RunTimeErrorUnknown (1). */
  semihosting_call(0x18, (const void*)(uintptr_t)(failed ? 0x20023u : 0x20026u));
  for (;;) {
  }
}

void fault_handler(void) {
  semihosting_write("fault\n");
  semihosting_exit(1);
}

/* Bytes of the stack that were written since reset (the pattern is gone). */
uint32_t stack_bytes_used(void) {
  const uint32_t* p = &__stack_limit__;
  while (p < &__stack_top__ && *p == STACK_PATTERN) ++p;
  return (uint32_t)((uintptr_t)&__stack_top__ - (uintptr_t)p);
}

void reset_handler(void) {
  for (uint32_t *src = &__data_load__, *dst = &__data_start__; dst < &__data_end__;) *dst++ = *src++;
  for (uint32_t* dst = &__bss_start__; dst < &__bss_end__;) *dst++ = 0;
  /* Full access to coprocessors 10 and 11 (the FPU): CPACR bits 20..23. */
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
  __asm__ volatile("dsb\n isb" ::: "memory");
  /* The stack pattern, up to a little below the current stack pointer. */
  uint32_t sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t* p = &__stack_limit__; (uintptr_t)p < sp - 64; ++p) *p = STACK_PATTERN;
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  semihosting_exit(main() != 0);
}
