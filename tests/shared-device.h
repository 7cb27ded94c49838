#pragma once
// Sim devices that processes share (the sim's sim_share): their capacity and each sim driver's use in
// shared memory, so that what one process holds another finds missing, and what a process held comes
// back when it dies, as on a real device. Placement and faults stay each driver's. A name makes the
// UUID, so the processes of one name meet at one board (docs/neighbours.md).

#include "../ggml-cuda/testing/sim.h"

#include <memory>

class shared_device final : public gcp::sim_share {
  public:
    static constexpr size_t NAME_LONGEST = sizeof(gcp::device_uuid) - 1; // the name and a device's number

    // the devices of `name` (letters, digits, '-', '_'), with a slot of this driver's; nullptr, with a
    // line, where none can be
    static std::shared_ptr<shared_device>       open(const char * name, int devices, size_t capacity);
    // a sim driver over `name`'s devices
    static std::shared_ptr<gcp::sim_primitives> sim(const char * name, size_t capacity);
    ~shared_device() override; // gives up the slot, and with it what the slot counts

    bool             take(int device, size_t bytes) override;
    void             give(int device, size_t bytes) override;
    size_t           free(int device) const override;
    gcp::device_uuid uuid(int device) const override;

  private:
    struct segment;
    shared_device(segment * seg, size_t slot, const char * name);
    size_t used(int device) const; // by every live driver

    segment * seg_;
    size_t    slot_;
    char      name_[NAME_LONGEST + 1];
};
