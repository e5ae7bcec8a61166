// Lab sobel, GPU side: call the student's sobel_v1 or sobel_v2 (the case's version) on the
// harness's image with the --block shape, expose the output. NPP's 8-bit horizontal Sobel
// filter (nppiFilterSobelHoriz_8u_C1R_Ctx) is the library baseline timed beside it, where
// NPP can be loaded: one direction and no threshold, where the lab computes both and the
// threshold, so its pixels per second are a floor to beat, not a like-for-like time.
#include <memory>
#include <string>

#include "labkit/harness.hpp"
#include "labkit/npp.hpp"
#include "problem.hpp"
#include "sobel.hpp"

namespace {

class SobelRun final : public labkit::DeviceRun {
public:
    SobelRun(const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs)
        : in_(*inputs.at(0)),
          width_(static_cast<int>(spec.param("width"))),
          height_(static_cast<int>(spec.param("height"))),
          threshold_(static_cast<int>(spec.param("threshold"))),
          version_(static_cast<int>(spec.param("version"))),
          out_("out", labkit::DType::u8,
               {static_cast<std::uint64_t>(spec.param("height")), static_cast<std::uint64_t>(spec.param("width"))}) {}

    // What the constructor allocates: the output image. NPP keeps no scratch of its own.
    static labkit::RunMemory memory(const labkit::CaseSpec& spec) {
        return {.outputs = static_cast<std::size_t>(spec.param("width")) * static_cast<std::size_t>(spec.param("height"))};
    }

    void run() override {
        const labkit::BlockShape shape = labkit::requested_block();  // 0 x 0: the student's choice
        const dim3 block(shape.x, shape.y, 1);
        const auto* in = in_.get<std::uint8_t>();
        auto* out = out_.get<std::uint8_t>();
        if (version_ == 1)
            sobel_v1(in, out, width_, height_, threshold_, block);
        else
            sobel_v2(in, out, width_, height_, threshold_, block);
    }
    std::vector<labkit::DeviceArray*> outputs() override { return {&out_}; }

    // NPP filters the interior, (width - 2) x (height - 2) pixels starting at (1, 1), reading
    // the one-pixel frame around it: the same pixels the lab computes.
    const char* library_name() const override {
        return interior() && labkit::Npp::load() ? "NPP nppiFilterSobelHoriz_8u_C1R (one direction, no threshold)"
                                                 : nullptr;
    }
    std::string library_unavailable() const override {
        return interior() ? labkit::Npp::why_unavailable() : "the image has no interior pixels for NPP to filter";
    }
    void run_library() override {
        const labkit::Npp& npp = *labkit::Npp::load();
        const std::size_t corner = static_cast<std::size_t>(width_) + 1;
        labkit::Npp::check(npp.filter_sobel_horiz_8u(in_.get<std::uint8_t>() + corner, width_,
                                                     out_.get<std::uint8_t>() + corner, width_,
                                                     {width_ - 2, height_ - 2}, npp.context()),
                           "nppiFilterSobelHoriz_8u_C1R_Ctx");
    }

private:
    bool interior() const { return width_ >= 3 && height_ >= 3; }

    const labkit::DeviceArray& in_;
    int width_, height_, threshold_, version_;
    labkit::DeviceArray out_;
};

}  // namespace

int main(int argc, char** argv) {
    return labkit::harness_main(
        argc, argv, lab_sobel::problem(),
        [](const labkit::CaseSpec& spec, const std::vector<labkit::DeviceArray*>& inputs) {
            return std::make_unique<SobelRun>(spec, inputs);
        },
        &SobelRun::memory);
}
