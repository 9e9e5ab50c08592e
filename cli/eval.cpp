#include "cli/verbs.h"
namespace sixnd::cli { int run_eval(int, char**) { return 1; } }
