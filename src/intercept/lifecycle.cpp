// mlbs — when the files of a program run under mlbs-run are made complete
// at their real paths: when its main() returns or it calls exit(), before
// it replaces itself (exec) or starts another program (posix_spawn,
// system, popen), before fork() (the child, without the parent's helpers,
// runs uncached and must find the files as the parent left them), and when
// a signal whose default action would end it arrives (the signal is then
// delivered again with that action), and at _exit() (the bytes a program
// wrote outlive it on a plain file system too). SIGKILL ends a process
// without it: only what fsync() made durable is sure to be there.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "core/thread_name.hpp"
#include "intercept/cache.hpp"
#include "intercept/real.hpp"

using mlbs::intercept::Cache;
namespace real = mlbs::intercept::real;

#define MLBS_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

void sync_now() {
  if (Cache* c = Cache::get()) c->sync_all();
}

// --- fork ----------------------------------------------------------------------

void before_fork() { sync_now(); }
void in_child() { Cache::disable(); }

__attribute__((constructor)) void install() { ::pthread_atfork(before_fork, nullptr, in_child); }

// --- signals -------------------------------------------------------------------

/// Signals whose default action ends the process and that a handler can catch.
constexpr int kEnding[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ};
int g_pipe[2] = {-1, -1};

extern "C" void on_signal(int sig) {
  const int saved = errno;
  const char s = static_cast<char>(sig);
  if (real::write(g_pipe[1], &s, 1) != 1) ::syscall(SYS_exit_group, 128 + sig);  // cannot hand it over: end now
  errno = saved;
}

/// The thread that makes the files complete when an ending signal came,
/// then lets the signal end the process as its default action does.
void watch() {
  for (;;) {
    char s = 0;
    const ssize_t n = real::read(g_pipe[0], &s, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n != 1 || s == 0) return;  // 0: exit is under way
    Cache::finish();
    ::signal(s, SIG_DFL);
    ::kill(::getpid(), s);
    return;
  }
}

std::once_flag g_watch_once;
std::thread* g_watcher = nullptr;

}  // namespace

namespace mlbs::intercept {

/// Called once the cache is active: handlers for the ending signals that
/// still have their default action (a program's own handlers stay).
void watch_signals() {
  std::call_once(g_watch_once, [] {
    if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;
    {
      // Like the helpers, the watcher takes no signal itself.
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);
      g_watcher = new std::thread(watch);
      mlbs::detail::name_os_thread(g_watcher->native_handle(), "mlbs-signals");
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    for (int sig : kEnding) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) != 0 || now.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

/// At exit: the watcher is told to stop and joined (not from itself).
void stop_watching() {
  if (!g_watcher || g_pipe[1] < 0) return;
  const char stop = 0;
  real::write(g_pipe[1], &stop, 1);
  if (g_watcher->get_id() != std::this_thread::get_id() && g_watcher->joinable()) g_watcher->join();
}

}  // namespace mlbs::intercept

// --- exit ----------------------------------------------------------------------

namespace {

using Main = int (*)(int, char**, char**);
Main g_main = nullptr;

int main_then_finish(int argc, char** argv, char** envp) {
  const int rc = g_main(argc, argv, envp);
  Cache::finish();
  return rc;
}

}  // namespace

/// The program's main() returns into mlbs first: its files are completed
/// before exit() runs any handler or static destructor (the helpers would
/// otherwise still run while the C++ runtime tears itself down).
MLBS_EXPORT int __libc_start_main(Main main, int argc, char** argv, void (*init)(), void (*fini)(),
                                  void (*rtld_fini)(), void* stack_end) {
  using Start = int (*)(Main, int, char**, void (*)(), void (*)(), void (*)(), void*);
  auto start = reinterpret_cast<Start>(::dlvsym(RTLD_NEXT, "__libc_start_main", "GLIBC_2.34"));
  if (!start) start = reinterpret_cast<Start>(::dlsym(RTLD_NEXT, "__libc_start_main"));
  g_main = main;
  return start(main_then_finish, argc, argv, init, fini, rtld_fini, stack_end);
}

namespace {

/// Before the process ends: its files complete, unless this thread is inside
/// the cache (a signal handler ending the process from there would wait for
/// the locks it interrupted, forever).
void finish_before_ending() {
  if (mlbs::intercept::t_held == 0) {
    Cache::finish();
  } else if (Cache::get()) {
    static const char msg[] = "mlbs-run: the process ended from a signal handler inside a file call: "
                              "only what fsync() made durable is sure to be complete\n";
    real::write(2, msg, sizeof msg - 1);
  }
}

using Exit = void (*)(int);

}  // namespace

MLBS_EXPORT void exit(int status) {
  finish_before_ending();
  static const Exit real_exit = reinterpret_cast<Exit>(::dlsym(RTLD_NEXT, "exit"));
  real_exit(status);
  __builtin_unreachable();
}

/// _exit() skips the program's handlers, not what it wrote: on a plain file
/// system write()'s bytes are in the page cache and outlive the process, so
/// here they are completed too (dash, for one, always ends with _exit()).
MLBS_EXPORT void _exit(int status) {
  finish_before_ending();
  static const Exit real = reinterpret_cast<Exit>(::dlsym(RTLD_NEXT, "_exit"));
  real(status);
  __builtin_unreachable();
}
MLBS_EXPORT void _Exit(int status) {
  finish_before_ending();
  static const Exit real = reinterpret_cast<Exit>(::dlsym(RTLD_NEXT, "_Exit"));
  real(status);
  __builtin_unreachable();
}

/// Last resort (a library that ends the process some other way).
__attribute__((destructor)) static void at_unload() { Cache::finish(); }

// --- exec and other programs -------------------------------------------------

MLBS_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  sync_now();
  return real::execve(path, argv, envp);
}
MLBS_EXPORT int execv(const char* path, char* const argv[]) { return execve(path, argv, environ); }
MLBS_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  sync_now();
  return real::execvpe(file, argv, envp);
}
MLBS_EXPORT int execvp(const char* file, char* const argv[]) { return execvpe(file, argv, environ); }
MLBS_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  sync_now();
  return real::fexecve(fd, argv, envp);
}

namespace {
std::vector<char*> collect(const char* first, va_list ap, char*** envp) {
  std::vector<char*> args{const_cast<char*>(first)};
  while (char* a = va_arg(ap, char*)) args.push_back(a);
  args.push_back(nullptr);
  if (envp) *envp = va_arg(ap, char**);
  return args;
}
}  // namespace

MLBS_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto args = collect(arg, ap, nullptr);
  va_end(ap);
  return execve(path, args.data(), environ);
}
MLBS_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  auto args = collect(arg, ap, nullptr);
  va_end(ap);
  return execvpe(file, args.data(), environ);
}
MLBS_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char** envp = nullptr;
  auto args = collect(arg, ap, &envp);
  va_end(ap);
  return execve(path, args.data(), envp);
}

/// vfork() is fork() here: the fork handlers complete the files first
/// (a program that uses vfork() correctly cannot tell the difference).
MLBS_EXPORT pid_t vfork() { return ::fork(); }

MLBS_EXPORT int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                            const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  sync_now();
  using Fn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*, char* const*,
                     char* const*);
  static const Fn f = reinterpret_cast<Fn>(::dlvsym(RTLD_NEXT, "posix_spawn", "GLIBC_2.15"));
  return f(pid, path, actions, attr, argv, envp);
}
MLBS_EXPORT int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  sync_now();
  using Fn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*, char* const*,
                     char* const*);
  static const Fn f = reinterpret_cast<Fn>(::dlvsym(RTLD_NEXT, "posix_spawnp", "GLIBC_2.15"));
  return f(pid, file, actions, attr, argv, envp);
}
MLBS_EXPORT int system(const char* command) {
  sync_now();
  using Fn = int (*)(const char*);
  static const Fn f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "system"));
  return f(command);
}
MLBS_EXPORT FILE* popen(const char* command, const char* type) {
  sync_now();
  using Fn = FILE* (*)(const char*, const char*);
  static const Fn f = reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, "popen"));
  return f(command, type);
}
