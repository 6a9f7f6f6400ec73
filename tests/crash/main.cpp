// mlbs_crash: one program, two roles. Run without --child it is the parent,
// which re-executes itself with --child for every kill.
#include "crash.hpp"

int main(int argc, char** argv) {
  const mlbs::crash::Options o = mlbs::crash::parse_options(argc, argv);
  return o.child ? mlbs::crash::run_child(o) : mlbs::crash::run_parent(o);
}
