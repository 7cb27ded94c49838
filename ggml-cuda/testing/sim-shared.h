#pragma once
// A sim device that processes share (ggml_cpool_sim_params.shared): its capacity and use in shared
// memory, a slot per sim driver, so that what one process allocates another finds missing, and what a
// process held comes back when it dies, as on a real device. Placement and faults stay each driver's.

#include "../drivers/primitives.h"

#include <memory>
#include <string>

namespace gcp {

constexpr size_t SIM_SHARED_SLOTS    = 64; // sim drivers that share one name at once
constexpr size_t SIM_SHARED_NAME_MAX = 64; // the longest name

class sim_shared {
  public:
    // whether a name is one ggml_cpool_sim_params.shared takes
    static bool   valid_name(const char * name);
    // the devices of `name`, with a slot of this driver's; UNSUPPORTED, with a line, where none can be
    static status open(const char * name, int devices, size_t capacity, std::unique_ptr<sim_shared> * out);
    ~sim_shared(); // gives up the slot and what it still counts

    bool        take(int device, size_t bytes); // false: the device is full
    void        give(int device, size_t bytes);
    size_t      free(int device) const;
    device_uuid uuid(int device) const; // the same in every process for one name and device

  private:
    struct segment;
    sim_shared(segment * seg, int slot, const char * name) : seg_(seg), slot_(slot), name_(name) {}
    size_t used(int device) const; // by every live driver

    segment *   seg_;
    int         slot_;
    std::string name_;
};

} // namespace gcp
